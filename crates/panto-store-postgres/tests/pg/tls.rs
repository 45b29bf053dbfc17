//! TLS to the server: `sslmode=require` / `verify-full` connect over TLS with the server's
//! certificate checked (against `sslrootcert` or the Mozilla roots), and without them the store
//! connects in plain text. The server here takes TCP connections over TLS only, so a store that
//! works against it is using TLS.

use panto_core::SessionStore;
use panto_store_postgres::PostgresStore;
use panto_testkit::store_contract::{append_one, user};

use panto_testkit::postgres::{start_tls, Durability, Server};

fn tls_server() -> Server {
    start_tls(Durability::Fast).unwrap_or_else(|e| panic!("PostgreSQL with TLS could not be started: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sslmode_require_connects_over_tls_and_checks_the_certificate() {
    let server = tls_server();
    let ca = server.ca_cert.clone().expect("a CA certificate");
    let db = server.url("postgres");

    // With the CA that signed the server's certificate: connected, and the whole store works
    // (the pool and the lock connection both go over TLS).
    for mode in ["require", "verify-ca", "verify-full"] {
        let url = format!("{db}?sslmode={mode}&sslrootcert={}", ca.display());
        let store = PostgresStore::connect(&url)
            .await
            .unwrap_or_else(|e| panic!("sslmode={mode}: {e}"));
        let id = panto_core::store::new_session_id();
        append_one(&*store, &id, &user(&format!("over TLS with {mode}")))
            .await
            .unwrap();
        assert!(store.list().await.unwrap().iter().any(|i| i.id == id));
        let loaded = store.load(&id).await.unwrap().unwrap();
        assert_eq!(loaded.messages[0].text(), format!("over TLS with {mode}"));
        store.release_all().await;
    }
    // The key=value form reads the same options.
    let kv = format!(
        "host=127.0.0.1 port={} user=postgres dbname=postgres sslmode=verify-full sslrootcert={}",
        server.port,
        ca.display()
    );
    PostgresStore::connect(&kv).await.unwrap();

    // The certificate is checked: without the CA, the Mozilla roots do not trust it.
    let e = PostgresStore::connect(&format!("{db}?sslmode=require"))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("UnknownIssuer") && e.contains("sslrootcert=FILE"), "{e}");

    // Without sslmode the store does not try TLS, and this server turns it away, saying why.
    let e = PostgresStore::connect(&db).await.unwrap_err().to_string();
    assert!(e.contains("no encryption") && e.contains("add sslmode=require"), "{e}");
}
