//! Running the current test binary again as a child process: a second writer in another
//! process, a process that is killed, a fleet of workers.
//!
//! The child is one test of the same binary, selected by its exact name and marked `#[ignore]`,
//! so that a normal run reports it as ignored rather than as a test that passed without checking
//! anything; the parent runs it with `--ignored` and the environment it needs.
//! It tells the parent how it went with [`report_to_parent`], one line on its standard output,
//! which the parent reads back with [`child_report`] (or [`wait_for_child`] in an async test):
//!
//! ```no_run
//! use panto_testkit::child::{child_test, report_to_parent, wait_for_child};
//!
//! #[tokio::test]
//! async fn a_second_process_sees_the_lock() {
//!     let child = child_test("locking::child_appends").env("CHILD_DIR", "/tmp/x").spawn().unwrap();
//!     assert_eq!(wait_for_child(child).await, "in use");
//! }
//!
//! #[test]
//! #[ignore = "the child half of a_second_process_sees_the_lock"]
//! fn child_appends() {
//!     let dir = std::env::var("CHILD_DIR").expect("set by the parent");
//!     // ... try to write in `dir` ...
//!     report_to_parent("in use");
//! }
//! # fn main() {}
//! ```

use std::process::{Child, Command, Stdio};

/// What starts the line a child reports on.
const REPORT_PREFIX: &str = "CHILD RESULT: ";

/// A command that runs ignored test `test` of this test binary alone (its full path, e.g.
/// `fs::locking::child_process_appends`), with its standard output and error captured. Add the
/// environment that makes the child act, then `spawn` it.
pub fn child_test(test: &str) -> Command {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("finding the test binary to run again: {e}"));
    let mut command = Command::new(exe);
    command
        .args([test, "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Waits for a child started from [`child_test`] and returns what it reported with
/// [`report_to_parent`]. Panics, with the child's output, when it failed or reported nothing
/// (when the test name matched no test, say).
pub fn child_report(child: Child) -> String {
    let output = child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("waiting for the child process: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "child failed ({}): {stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        // The harness prints the test's name on the same line, so look anywhere in a line.
        .find_map(|l| l.split_once(REPORT_PREFIX).map(|(_, result)| result))
        .unwrap_or_else(|| panic!("the child reported nothing (did the test filter match?): {stdout}"))
        .to_owned()
}

/// [`child_report`] on a blocking thread, so an async test's runtime keeps running meanwhile.
pub async fn wait_for_child(child: Child) -> String {
    tokio::task::spawn_blocking(move || child_report(child))
        .await
        .unwrap_or_else(|e| panic!("waiting for the child process: {e}"))
}

/// Called in the child: reports `result` to the parent, which reads it with [`child_report`].
#[allow(clippy::print_stdout)]
pub fn report_to_parent(result: &str) {
    println!("{REPORT_PREFIX}{result}");
}
