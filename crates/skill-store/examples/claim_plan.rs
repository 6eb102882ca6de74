//! Prints `EXPLAIN (ANALYZE, BUFFERS)` of the claim's candidate query on a PostgreSQL database,
//! as an executor admitting the local entrypoints given would run it now (in a transaction rolled
//! back after). `cargo xtask bench core postgres` prints it.
//!
//! usage: claim_plan URL ENTRYPOINT...

#![allow(clippy::print_stdout, clippy::print_stderr)]

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut arguments = std::env::args().skip(1);
    let Some(url) = arguments.next() else {
        eprintln!("usage: claim_plan URL ENTRYPOINT...");
        std::process::exit(2);
    };
    let entrypoints: Vec<String> = arguments.collect();
    let plan = async {
        let store = skill_store::PgStore::open(&url, &skill_store::StoreOptions::default()).await?;
        store.claim_plan(&entrypoints).await
    };
    match plan.await {
        Ok(plan) => println!("{plan}"),
        Err(error) => {
            eprintln!("error: {error}");
            std::process::exit(1);
        }
    }
}
