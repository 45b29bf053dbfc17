//! No part of a database password reaches an error message: not from a failed connect, not
//! from a URL whose password holds `@`, `:` or `/`.

use panto_store_postgres::{redact_connection_string, PostgresStore};

/// Pieces of the password below; none may show in any message.
const PIECES: [&str; 4] = ["Zq8", "Xv3", "Kp5", "Wm7"];

fn assert_no_password(shown: &str) {
    for piece in PIECES {
        assert!(!shown.contains(piece), "{piece:?} shows in: {shown}");
    }
}

/// A port on 127.0.0.1 that nothing listens on: bound, then let go.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn a_failed_connect_never_shows_the_password() {
    let port = closed_port();
    // `:` and `/` in a password are read as the password (the first `@` ends it), so this
    // connects, is refused, and the error names where it went.
    let url = format!("postgres://panto:Zq8:Xv3/Kp5Wm7@127.0.0.1:{port}/panto");
    let error = PostgresStore::connect(&url).await.unwrap_err().to_string();
    assert!(
        error.contains(&format!("host=127.0.0.1 port={port} dbname=panto user=panto")),
        "{error}"
    );
    assert_no_password(&error);
    assert_eq!(
        redact_connection_string(&url),
        format!("postgres://panto:***@127.0.0.1:{port}/panto")
    );

    // With `@` in the password the driver would take part of it for the host; the URL is
    // refused before anything is parsed, with the fix.
    for url in [
        format!("postgres://panto:Zq8@Xv3@127.0.0.1:{port}/panto"),
        format!("postgres://panto:Zq8@Xv3:Kp5/Wm7@127.0.0.1:{port}/panto?sslmode=require"),
        format!("postgresql://panto:Zq8?Xv3@Kp5/Wm7@localhost:{port}"),
    ] {
        let error = PostgresStore::connect(&url).await.unwrap_err().to_string();
        assert!(error.contains("percent-encode `@`") && error.contains("%40"), "{error}");
        assert_no_password(&error);
        assert_no_password(&redact_connection_string(&url));
    }

    // Encoded, the same password connects as far as the closed port, and is not shown.
    let url = format!("postgres://panto:Zq8%40Xv3@127.0.0.1:{port}/panto");
    let error = PostgresStore::connect(&url).await.unwrap_err().to_string();
    assert!(error.contains("connecting to PostgreSQL at host=127.0.0.1"), "{error}");
    assert_no_password(&error);

    // And in the `key=value` form.
    let conninfo = format!("host=127.0.0.1 port={port} user=panto password='Zq8 Xv3@Kp5' dbname=panto");
    let error = PostgresStore::connect(&conninfo).await.unwrap_err().to_string();
    assert_no_password(&error);
    assert_no_password(&redact_connection_string(&conninfo));
}

#[tokio::test]
async fn a_question_mark_in_the_password_does_not_lose_the_tls_options() {
    // The query is found after the password, so `sslmode` still applies: a TLS connect to a
    // closed port, not a plain one.
    let port = closed_port();
    let url =
        format!("postgres://panto:Zq8?Xv3@127.0.0.1:{port}/panto?sslmode=verify-full&sslrootcert=/no/such/ca.pem");
    let error = PostgresStore::connect(&url).await.unwrap_err().to_string();
    assert!(error.contains("sslrootcert=/no/such/ca.pem"), "{error}");
    assert_no_password(&error);
}
