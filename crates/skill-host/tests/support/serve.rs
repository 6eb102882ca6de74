//! Serving an axum router on 127.0.0.1 from a thread of its own, for tests that need a real HTTP
//! peer while the code under test runs on its own runtime.

/// Starts `app` on a free port; returns `http://127.0.0.1:<port>`.
pub(crate) fn serve(app: axum::Router) -> String {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
            sender.send(listener.local_addr().expect("address")).expect("send");
            axum::serve(listener, app).await.expect("serve");
        });
    });
    format!("http://{}", receiver.recv().expect("the server starts"))
}
