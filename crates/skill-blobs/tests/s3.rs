//! The S3 blob store against a real S3-compatible server (`SKILL_TEST_S3_URL`; `cargo xtask
//! test -p skill-blobs` starts one).

use skill_blobs::{S3Blobs, S3Options};
use skill_store::{BlobStore, ErrorKind};

/// A new bucket on the test server, and the options of a store in it under `prefix`.
async fn bucket(name: &str, prefix: &str) -> S3Options {
    let server = std::env::var("SKILL_TEST_S3_URL")
        .expect("SKILL_TEST_S3_URL names an S3-compatible server; `cargo xtask test -p skill-blobs` starts one");
    let bucket = format!("{name}-{}", std::process::id());
    let made = reqwest::Client::new().put(format!("{server}/{bucket}")).send().await.expect("the server answers");
    assert!(made.status().is_success(), "creating the bucket: {}", made.status());
    S3Options {
        url: format!("s3://{bucket}/{prefix}"),
        endpoint: Some(server),
        region: Some("us-east-1".to_owned()),
        access_key_id: Some("test".to_owned()),
        secret_access_key: Some("test".to_owned()),
    }
}

#[tokio::test]
async fn blobs_go_in_and_come_back_whole() {
    let options = bucket("blobs", "core/a").await;
    let blobs = S3Blobs::new(&options).expect("a store");
    let content: Vec<u8> = (0..=255u8).cycle().take(300_000).collect();
    let sha = "ab".repeat(32);
    blobs.put(&sha, &content).await.expect("put");
    blobs.put(&sha, &content).await.expect("the same blob again changes nothing");
    assert_eq!(blobs.get(&sha).await.expect("get"), content);
    // Under the prefix: another prefix of the same bucket does not see it.
    let other =
        S3Blobs::new(&S3Options { url: options.url.replace("core/a", "core/b"), ..options.clone() }).expect("a store");
    assert_eq!(other.get(&sha).await.expect_err("elsewhere").kind(), ErrorKind::NotFound);
    assert_eq!(blobs.get(&"cd".repeat(32)).await.expect_err("missing").kind(), ErrorKind::NotFound);
    for bad in ["", "AB", "../etc/passwd", &"g".repeat(64)] {
        assert_eq!(blobs.get(bad).await.expect_err("refused").kind(), ErrorKind::Invalid, "{bad}");
    }
}

#[tokio::test]
async fn a_store_that_cannot_be_reached_is_unavailable_and_bad_urls_are_named() {
    let unreachable = S3Options {
        url: "s3://nowhere".to_owned(),
        endpoint: Some("http://127.0.0.1:9".to_owned()),
        region: Some("us-east-1".to_owned()),
        access_key_id: Some("test".to_owned()),
        secret_access_key: Some("test".to_owned()),
    };
    let blobs = S3Blobs::new(&unreachable).expect("a store (nothing is sent yet)");
    let error = blobs.put(&"ab".repeat(32), b"x").await.expect_err("nothing answers");
    assert_eq!(error.kind(), ErrorKind::Unavailable, "{error}");
    for url in ["https://bucket", "s3://", "s3:///prefix"] {
        let refused = S3Blobs::new(&S3Options { url: url.to_owned(), ..S3Options::default() }).expect_err("refused");
        assert!(refused.contains("s3://"), "{refused}");
    }
}
