#!/bin/sh
# A tiny Trident --exec agent in POSIX shell (no jq): answers with the request's text in upper
# case as artifact "upper", then completes.
#
# Trident writes "text" as the last field of the request line, so a greedy sed match on
# "text":" finds it (a quote inside the text is escaped, so it cannot end the match early).
# awk upper-cases it, copying JSON escapes such as \n or \u00e9 unchanged; the result is still
# a valid JSON string body, printed back as is.
IFS= read -r request
upper=$(printf '%s\n' "$request" |
    sed -n 's/.*"text":"\(.*\)"}$/\1/p' |
    awk '{
        out = ""
        for (i = 1; i <= length($0); i++) {
            c = substr($0, i, 1)
            if (c == "\\") { out = out c substr($0, i + 1, 1); i++ }
            else out = out toupper(c)
        }
        print out
    }')
printf '{"type":"artifact","id":"upper","name":"upper","text":"%s"}\n' "$upper"
printf '{"type":"completed"}\n'
