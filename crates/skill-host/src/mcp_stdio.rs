//! MCP over stdio with the screen ([`crate::mcp::screen`]) in front of rmcp: each line from
//! stdin is checked first; a malformed one is answered here (with `"id": null` where the
//! message has no usable id), the rest go to rmcp through a pipe. rmcp's answers and the
//! screen's go to stdout a whole line at a time under stdout's lock, so they never interleave
//! within a message.

use std::io::Write as _;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};

use crate::mcp::screen;

/// The largest chunk the input pipe buffers before the reader waits.
const PIPE_BYTES: usize = 1 << 16;

/// Writes whole lines to the process's stdout: what it is given is kept until a newline ends
/// it, then written with stdout's lock held. A write to stdout blocks the task briefly; the
/// other end of stdio is the client, which reads.
#[derive(Debug, Default)]
pub struct StdoutLines {
    pending: Vec<u8>,
}

impl StdoutLines {
    fn write_complete_lines(&mut self) -> std::io::Result<()> {
        let Some(last) = self.pending.iter().rposition(|byte| *byte == b'\n') else { return Ok(()) };
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(&self.pending[..=last])?;
        stdout.flush()?;
        self.pending.drain(..=last);
        Ok(())
    }
}

impl AsyncWrite for StdoutLines {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, bytes: &[u8]) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        this.pending.extend_from_slice(bytes);
        Poll::Ready(this.write_complete_lines().map(|()| bytes.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let mut stdout = std::io::stdout().lock();
        let written = stdout.write_all(&this.pending).and_then(|()| stdout.flush());
        this.pending.clear();
        Poll::Ready(written)
    }

    fn poll_shutdown(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.poll_flush(context)
    }
}

/// The reader and writer rmcp serves on: the screened lines of `input`, and stdout.
pub fn screened<R>(input: R) -> (DuplexStream, StdoutLines)
where
    R: AsyncRead + Unpin + Send + 'static,
{
    let (rmcp_in, mut to_rmcp) = tokio::io::duplex(PIPE_BYTES);
    tokio::spawn(async move {
        let mut lines = BufReader::new(input).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if line.trim().is_empty() {
                continue;
            }
            match screen::screen(line.as_bytes()) {
                Some(refusal) => {
                    let text = format!("{}\n", refusal.to_json());
                    let mut stdout = std::io::stdout().lock();
                    if stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()).is_err() {
                        break;
                    }
                }
                None => {
                    let mut message = line.into_bytes();
                    message.push(b'\n');
                    if to_rmcp.write_all(&message).await.is_err() {
                        break;
                    }
                }
            }
        }
        // Dropping the pipe's end tells rmcp that the input has ended.
    });
    (rmcp_in, StdoutLines::default())
}
