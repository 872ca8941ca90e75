-- The protocol generation a push configuration was created through ('1.0' or '0.3'): its
-- notifications are sent in that generation's payload shape. Rows from before are 1.0's.
ALTER TABLE push_configs ADD COLUMN protocol TEXT NOT NULL DEFAULT '1.0';
