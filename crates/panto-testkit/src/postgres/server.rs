//! Starting a throwaway PostgreSQL server, with the standard library only.
//!
//! One implementation of the fiddly parts, for the PostgreSQL store's tests and benchmarks,
//! the CLI's tests and `cargo xtask postgres`: finding the binaries, running as the `postgres`
//! user when this process is root (`initdb` refuses to run as root, and CI runs as root),
//! picking a free port, waiting until the server accepts connections, and cleaning up.
//!
//! [`start`] runs `initdb` into a fresh directory under the system temp dir, then `postgres`
//! listening only on 127.0.0.1 on a free port (and on a unix socket in that directory), with
//! trust authentication. The server is watched by a small shell process whose standard input is
//! a pipe from this process: when this process exits, however it exits, the pipe closes and the
//! watcher stops the server and deletes the directory. Nothing is left behind, and no destructor
//! is needed. [`Server::stop`] does the same at once.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Where to look for `initdb`, `postgres` and `pg_ctl` before the distribution's directories.
pub const BINDIR_ENV: &str = "PANTO_PG_BINDIR";

/// Whether the server syncs to disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// `fsync=off`, `synchronous_commit=off`, `full_page_writes=off`: fast, for tests.
    Fast,
    /// PostgreSQL's defaults: every commit is flushed to disk before it returns.
    Fsync,
}

/// A running server, stopped when this process exits or by [`Server::stop`].
#[derive(Debug)]
pub struct Server {
    /// `postgres://postgres@127.0.0.1:<port>`, without a database name.
    pub base_url: String,
    /// The TCP port on 127.0.0.1.
    pub port: u16,
    /// The directory of the server binaries.
    pub bindir: PathBuf,
    /// For a server started by [`start_tls`]: the PEM file of the CA that signed its certificate.
    pub ca_cert: Option<PathBuf>,
    /// The watcher and its standard input, which this process holds open and never writes.
    watcher: Mutex<Option<(Child, ChildStdin)>>,
}

impl Server {
    /// The URL of database `dbname`.
    pub fn url(&self, dbname: &str) -> String {
        format!("{}/{dbname}", self.base_url)
    }

    /// Creates database `name` with the `createdb` client.
    pub fn createdb(&self, name: &str) -> Result<(), String> {
        output(Command::new(self.bindir.join("createdb")).args([
            "-h",
            "127.0.0.1",
            "-p",
            &self.port.to_string(),
            "-U",
            "postgres",
            name,
        ]))
        .map(|_| ())
    }

    /// Stops the server and removes its directory now, waiting until that is done.
    pub fn stop(&self) {
        let taken = self.watcher.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((mut child, stdin)) = taken {
            drop(stdin);
            let _ = child.wait();
        }
    }
}

/// Starts a server. As root, the server runs as the `postgres` user.
pub fn start(durability: Durability) -> Result<Server, String> {
    start_with(durability, false)
}

/// Starts a server that takes TCP connections over TLS only (`hostssl` in `pg_hba.conf`), with a
/// certificate for `localhost` and `127.0.0.1` signed by a throwaway CA ([`Server::ca_cert`]),
/// made with the `openssl` command.
pub fn start_tls(durability: Durability) -> Result<Server, String> {
    start_with(durability, true)
}

fn start_with(durability: Durability, tls: bool) -> Result<Server, String> {
    let bindir = find_bindir()?;
    let run_as = if output(Command::new("id").arg("-u"))? == "0" {
        Some("postgres")
    } else {
        None
    };
    // A port that is free now may be taken before the server binds it; try a few.
    let mut last = String::new();
    for _ in 0..3 {
        match start_once(&bindir, run_as, durability, tls) {
            Ok(server) => return Ok(server),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// The directory of the server binaries: `$PANTO_PG_BINDIR`, else the newest
/// `/usr/lib/postgresql/<version>/bin` (Debian's layout), else `pg_config --bindir`.
pub fn find_bindir() -> Result<PathBuf, String> {
    if let Ok(dir) = std::env::var(BINDIR_ENV) {
        return Ok(PathBuf::from(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Ok(bin);
    }
    if let Ok(dir) = output(Command::new("pg_config").arg("--bindir")) {
        if Path::new(&dir).join("initdb").exists() {
            return Ok(PathBuf::from(dir));
        }
    }
    Err(format!(
        "no PostgreSQL server binaries (initdb, postgres, pg_ctl) in /usr/lib/postgresql/*/bin or \
         `pg_config --bindir`: install the `postgresql` package (bash .ci/run does) or set {BINDIR_ENV}"
    ))
}

/// The watcher: starts the server, waits for this process to close its stdin (it never writes;
/// the pipe closes when this process exits), then stops the server and removes the directory.
/// Arguments: user to run as (or ""), bindir, data dir, port, root dir (also the socket dir),
/// server settings, log file.
const WATCHER: &str = r#"
as=""; [ -n "$1" ] && as="runuser -u $1 --"
$as "$2/postgres" -D "$3" -p "$4" -k "$5" $6 </dev/null >>"$7" 2>&1 &
cat >/dev/null
$as "$2/pg_ctl" -D "$3" -m immediate -w stop >/dev/null 2>&1
wait
rm -rf "$5"
"#;

fn start_once(bindir: &Path, run_as: Option<&str>, durability: Durability, tls: bool) -> Result<Server, String> {
    let root = fresh_dir()?;
    if let Some(user) = run_as {
        let uid = parse_id(&output(Command::new("id").args(["-u", user]))?, user)?;
        let gid = parse_id(&output(Command::new("id").args(["-g", user]))?, user)?;
        std::os::unix::fs::chown(&root, Some(uid), Some(gid))
            .map_err(|e| format!("giving {} to the {user} user: {e}", root.display()))?;
    }
    let data = root.join("data");
    let log = root.join("server.log");
    let initdb = as_user(run_as, &bindir.join("initdb"))
        .arg("-D")
        .arg(&data)
        .args(["-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync"])
        .output()
        .map_err(|e| format!("running initdb: {e}"))?;
    if !initdb.status.success() {
        let _ = std::fs::remove_dir_all(&root);
        return Err(format!(
            "initdb failed ({}): {}{}",
            initdb.status,
            String::from_utf8_lossy(&initdb.stdout),
            String::from_utf8_lossy(&initdb.stderr)
        ));
    }

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("finding a free port: {e}"))?
        .port();
    let mut settings: Vec<String> = [
        "listen_addresses=127.0.0.1",
        "max_connections=300",
        "shared_buffers=64MB",
    ]
    .map(String::from)
    .to_vec();
    if durability == Durability::Fast {
        settings.extend(["fsync=off", "synchronous_commit=off", "full_page_writes=off"].map(String::from));
    }
    let ca_cert = if tls {
        let made = make_certs(&root, run_as).and_then(|ca| {
            std::fs::write(
                data.join("pg_hba.conf"),
                "local all all trust\nhostssl all all 127.0.0.1/32 trust\n",
            )
            .map_err(|e| format!("writing pg_hba.conf: {e}"))?;
            Ok(ca)
        });
        let ca = match made {
            Ok(ca) => ca,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&root);
                return Err(e);
            }
        };
        settings.push("ssl=on".to_owned());
        settings.push(format!("ssl_cert_file={}", root.join("server.crt").display()));
        settings.push(format!("ssl_key_file={}", root.join("server.key").display()));
        Some(ca)
    } else {
        None
    };
    let settings: Vec<String> = settings.iter().map(|s| format!("-c {s}")).collect();
    let mut watcher = Command::new("sh")
        .arg("-c")
        .arg(WATCHER)
        .arg("panto-pg-watcher")
        .arg(run_as.unwrap_or(""))
        .arg(bindir)
        .arg(&data)
        .arg(port.to_string())
        .arg(&root)
        .arg(settings.join(" "))
        .arg(&log)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("starting the server's watcher (sh): {e}"))?;
    let stdin = watcher.stdin.take().ok_or("the watcher has no stdin")?;

    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ready = Command::new(bindir.join("pg_isready"))
            .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-t", "1"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if ready {
            break;
        }
        let log_text = read_log(&log);
        let exited = watcher.try_wait().ok().flatten().is_some();
        // A FATAL line means the server gave up (a port taken, a bad setting), except the one
        // a readiness probe gets while the server is still starting.
        let fatal = log_text
            .lines()
            .any(|l| l.contains("FATAL") && !l.contains("the database system is starting up"));
        if exited || fatal || Instant::now() > deadline {
            // Closing stdin makes the watcher stop whatever started, and clean up.
            drop(stdin);
            let _ = watcher.wait();
            return Err(format!(
                "the server on 127.0.0.1:{port} did not become ready; its log says:\n{log_text}"
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(Server {
        base_url: format!("postgres://postgres@127.0.0.1:{port}"),
        port,
        bindir: bindir.to_owned(),
        ca_cert,
        watcher: Mutex::new(Some((watcher, stdin))),
    })
}

/// Makes a CA and a server certificate for `localhost` and `127.0.0.1` signed by it in `root`
/// (`ca.crt`, `server.crt`, `server.key`, the key readable only by the server's user), and
/// returns the CA certificate's path.
fn make_certs(root: &Path, run_as: Option<&str>) -> Result<PathBuf, String> {
    let path = |name: &str| root.join(name).display().to_string();
    output(
        Command::new("openssl")
            .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2"])
            .args([
                "-subj",
                "/CN=panto-test-ca",
                "-keyout",
                &path("ca.key"),
                "-out",
                &path("ca.crt"),
            ]),
    )?;
    output(
        Command::new("openssl")
            .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2"])
            .args([
                "-subj",
                "/CN=localhost",
                "-CA",
                &path("ca.crt"),
                "-CAkey",
                &path("ca.key"),
                "-addext",
                "subjectAltName=DNS:localhost,IP:127.0.0.1",
                "-addext",
                "basicConstraints=critical,CA:FALSE",
                "-addext",
                "extendedKeyUsage=serverAuth",
                "-keyout",
                &path("server.key"),
                "-out",
                &path("server.crt"),
            ]),
    )?;
    let key = root.join("server.key");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| format!("restricting {}: {e}", key.display()))?;
    }
    if let Some(user) = run_as {
        let uid = parse_id(&output(Command::new("id").args(["-u", user]))?, user)?;
        let gid = parse_id(&output(Command::new("id").args(["-g", user]))?, user)?;
        for name in ["server.key", "server.crt"] {
            std::os::unix::fs::chown(root.join(name), Some(uid), Some(gid))
                .map_err(|e| format!("giving {name} to the {user} user: {e}"))?;
        }
    }
    Ok(root.join("ca.crt"))
}

/// A new, empty directory under the system temp dir, readable only by its owner.
fn fresh_dir() -> Result<PathBuf, String> {
    let base = std::env::temp_dir();
    for attempt in 0..100u32 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir = base.join(format!("panto-pg-{}-{nanos:x}-{attempt}", std::process::id()));
        match std::fs::DirBuilder::new().create(&dir) {
            Ok(()) => {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
                    .map_err(|e| format!("restricting {}: {e}", dir.display()))?;
                return Ok(dir);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("creating a directory in {}: {e}", base.display())),
        }
    }
    Err(format!("could not find a fresh directory name in {}", base.display()))
}

fn read_log(path: &Path) -> String {
    let mut text = String::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let _ = f.read_to_string(&mut text);
    }
    text
}

/// A command that runs `program` as `user` (via `runuser`), or as this process's user.
fn as_user(user: Option<&str>, program: &Path) -> Command {
    match user {
        Some(user) => {
            let mut c = Command::new("runuser");
            c.args(["-u", user, "--"]).arg(program);
            c
        }
        None => Command::new(program),
    }
}

fn output(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("running {cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn parse_id(s: &str, user: &str) -> Result<u32, String> {
    s.parse()
        .map_err(|_| format!("`id` gave {s:?} for the {user} user, not a number"))
}
