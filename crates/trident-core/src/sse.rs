//! [`skip_bom`]: what the clients do to an SSE body before eventsource-stream parses it.

use futures::{Stream, StreamExt};

const BOM: &[u8] = "\u{feff}".as_bytes();

/// A chunk of an SSE body after [`skip_bom`]: the body's head as rewritten, or a later chunk
/// unchanged.
#[derive(Debug)]
pub enum SseChunk<B> {
    /// The first bytes of the body, after the rewrite.
    Head(Vec<u8>),
    /// A chunk after the head, as received.
    Body(B),
}

impl<B: AsRef<[u8]>> AsRef<[u8]> for SseChunk<B> {
    fn as_ref(&self) -> &[u8] {
        match self {
            SseChunk::Head(v) => v,
            SseChunk::Body(b) => b.as_ref(),
        }
    }
}

/// Drops the UTF-8 byte-order mark that may open an SSE body (the SSE spec's decoding skips
/// one) and starts the body with an empty line, which the spec makes a no-op.
///
/// eventsource-stream 0.2.3 skips the BOM itself with `&s[1..]`, which panics: U+FEFF is three
/// bytes in UTF-8 (found by `fuzz/`'s `sse_parser`). So the parser must never see a BOM as
/// the first character of a body; the leading empty line also covers a body that opens with
/// two BOMs, whose second one the spec keeps.
pub fn skip_bom<S, B, E>(body: S) -> impl Stream<Item = Result<SseChunk<B>, E>>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    // `Some(bytes)` until the head is decided: the body so far, while it could still be the
    // start of a BOM.
    let mut pending: Option<Vec<u8>> = Some(Vec::new());
    body.map(Some)
        .chain(futures::stream::once(async { None }))
        .map(move |item| {
            let Some(item) = item else {
                // The end: a body shorter than a BOM goes on as it was (the parser reports
                // an incomplete UTF-8 sequence).
                return pending
                    .take()
                    .filter(|p| !p.is_empty())
                    .map(|p| Ok(SseChunk::Head(p)));
            };
            let chunk = match item {
                Ok(chunk) => chunk,
                Err(e) => return Some(Err(e)),
            };
            let Some(mut head) = pending.take() else {
                return Some(Ok(SseChunk::Body(chunk)));
            };
            head.extend_from_slice(chunk.as_ref());
            if head.len() < BOM.len() && BOM.starts_with(&head) {
                pending = Some(head);
                return Some(Ok(SseChunk::Head(Vec::new())));
            }
            let skip = if head.starts_with(BOM) { BOM.len() } else { 0 };
            let mut out = Vec::with_capacity(head.len() + 1 - skip);
            out.push(b'\n');
            out.extend_from_slice(&head[skip..]);
            Some(Ok(SseChunk::Head(out)))
        })
        .filter_map(futures::future::ready)
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use futures::StreamExt;

    use super::skip_bom;

    fn run(chunks: &[&[u8]]) -> Vec<u8> {
        let body = futures::stream::iter(chunks.iter().map(|c| Ok::<_, Infallible>(c.to_vec())));
        futures::executor::block_on(skip_bom(body).collect::<Vec<_>>())
            .into_iter()
            .flat_map(|c| match c {
                Ok(c) => c.as_ref().to_vec(),
                Err(e) => match e {},
            })
            .collect()
    }

    #[test]
    fn drops_one_bom_wherever_the_chunks_cut_it() {
        let body = "\u{feff}data: x\n\n".as_bytes();
        for cut in 0..=body.len() {
            let (a, b) = body.split_at(cut);
            assert_eq!(run(&[a, b]), b"\ndata: x\n\n", "cut at {cut}");
        }
        assert_eq!(
            run(&[b"\xef", b"", b"\xbb", b"\xbf\xef\xbb\xbfx"]),
            "\n\u{feff}x".as_bytes()
        );
    }

    #[test]
    fn leaves_other_bodies_alone_but_for_a_leading_empty_line() {
        assert_eq!(run(&[b"data: x\n\n"]), b"\ndata: x\n\n");
        assert_eq!(run(&[b"\xef\xbb"]), b"\xef\xbb");
        assert_eq!(run(&[b""]), b"");
        assert_eq!(run(&[]), b"");
    }
}
