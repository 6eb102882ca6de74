//! MCP over stdio with the screen ([`crate::mcp::screen`]) in front of rmcp: each line from
//! stdin is checked first; a malformed one is answered here (with `"id": null` where the
//! message has no usable id), the rest go to rmcp through a pipe, and rmcp's answers reach
//! stdout a whole line at a time, so the two writers never interleave within a message.

use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::Mutex;

use crate::mcp::screen;

/// The largest line a pipe buffers before the writer waits.
const PIPE_BYTES: usize = 1 << 16;

/// The reader and writer rmcp serves on, fed from `input` and emptied into `output`.
pub fn screened<R, W>(input: R, output: W) -> (DuplexStream, DuplexStream)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (rmcp_in, mut to_rmcp) = tokio::io::duplex(PIPE_BYTES);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(PIPE_BYTES);
    let output = Arc::new(Mutex::new(output));
    let answers = Arc::clone(&output);
    tokio::spawn(async move {
        let mut lines = BufReader::new(input).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if line.trim().is_empty() {
                continue;
            }
            match screen::screen(line.as_bytes()) {
                Some(refusal) => {
                    let mut out = answers.lock().await;
                    let text = format!("{}\n", refusal.to_json());
                    if out.write_all(text.as_bytes()).await.is_err() || out.flush().await.is_err() {
                        break;
                    }
                }
                None => {
                    if to_rmcp.write_all(line.as_bytes()).await.is_err() || to_rmcp.write_all(b"\n").await.is_err() {
                        break;
                    }
                }
            }
        }
        // Dropping the pipe's end tells rmcp that the input has ended.
    });
    tokio::spawn(async move {
        let mut lines = BufReader::new(from_rmcp).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let mut out = output.lock().await;
            if out.write_all(line.as_bytes()).await.is_err()
                || out.write_all(b"\n").await.is_err()
                || out.flush().await.is_err()
            {
                break;
            }
        }
    });
    (rmcp_in, rmcp_out)
}
