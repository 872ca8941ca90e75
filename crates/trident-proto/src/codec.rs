//! The gRPC codec of the generated stubs: prost encoding, with one change. A request that is
//! not valid protobuf (truncated, wrong wire types, nested past prost's recursion limit) is the
//! caller's fault, and the A2A error table maps parse errors to `INVALID_ARGUMENT`; tonic-prost
//! reports them as `INTERNAL`.

use std::marker::PhantomData;

use prost::Message;
use tonic::Status;
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder};
use tonic_prost::{ProstCodec, ProstEncoder};

/// Prost encoding; decoding failures are `INVALID_ARGUMENT`.
#[derive(Debug, Clone)]
pub struct A2aCodec<T, U> {
    _pd: PhantomData<(T, U)>,
}

impl<T, U> Default for A2aCodec<T, U> {
    fn default() -> Self {
        Self { _pd: PhantomData }
    }
}

impl<T, U> Codec for A2aCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = A2aDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstCodec::<T, U>::raw_encoder(BufferSettings::default())
    }

    fn decoder(&mut self) -> Self::Decoder {
        A2aDecoder { _pd: PhantomData }
    }
}

/// Decodes `U`, mapping malformed input to `INVALID_ARGUMENT`.
#[derive(Debug, Clone)]
pub struct A2aDecoder<U> {
    _pd: PhantomData<U>,
}

impl<U: Message + Default> Decoder for A2aDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        U::decode(buf).map(Some).map_err(|e| {
            Status::invalid_argument(format!("the message is not valid protobuf: {e}"))
        })
    }
}
