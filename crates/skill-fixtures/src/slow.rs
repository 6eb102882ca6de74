//! Raw HTTP/1.1 over blocking TCP, for tests of what a server does with clients that stall:
//! connections that send half a header, or a header announcing a body that never comes.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Opens `count` connections to `address`, each sending the first lines of a request's header
/// and never its end.
pub fn half_headers(address: &str, count: usize) -> Vec<TcpStream> {
    (0..count)
        .map(|_| {
            let mut stream = TcpStream::connect(address).expect("connects");
            stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: stalled\r\n").expect("writes");
            stream
        })
        .collect()
}

/// Opens a connection to `address` and sends a whole header announcing a body of
/// `announced` bytes, then only `sent` of them.
pub fn stalled_body(address: &str, path: &str, headers: &[(&str, &str)], announced: usize, sent: usize) -> TcpStream {
    let mut stream = TcpStream::connect(address).expect("connects");
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {announced}\r\n"
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).expect("writes");
    stream.write_all(&vec![b' '; sent]).expect("writes");
    stream
}

/// `GET path` on a new connection with `Connection: close`; the status code and the body, or
/// `None` when no whole answer came within `seconds`.
pub fn get(address: &str, path: &str, seconds: u64) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(address).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(seconds))).ok()?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n").ok()?;
    let answer = read_to_close(&mut stream, Duration::from_secs(seconds))?;
    let status = answer.split(' ').nth(1)?.parse().ok()?;
    let body = answer.split_once("\r\n\r\n").map(|(_, body)| body.to_owned()).unwrap_or_default();
    Some((status, body))
}

/// What the server sends on `stream` until it closes it, or `None` when it has not closed it
/// within `limit`.
pub fn read_to_close(stream: &mut TcpStream, limit: Duration) -> Option<String> {
    let deadline = Instant::now() + limit;
    let mut bytes = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let left = deadline.checked_duration_since(Instant::now())?;
        stream.set_read_timeout(Some(left.max(Duration::from_millis(1)))).ok()?;
        match stream.read(&mut buffer) {
            Ok(0) => return Some(String::from_utf8_lossy(&bytes).into_owned()),
            Ok(n) => bytes.extend_from_slice(&buffer[..n]),
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => {
                return Some(String::from_utf8_lossy(&bytes).into_owned());
            }
            Err(_) => return None,
        }
    }
}
