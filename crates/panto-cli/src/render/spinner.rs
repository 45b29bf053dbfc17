//! The spinner in the footer: what panto waits for (the model, a tool by name) and for how long.
//!
//! It draws from its own thread, so it animates while the turn's future waits on the network. A
//! mutex around "is it showing" makes stopping exact: once [`Spinner::stop`] returns, the spinner
//! is off the footer and the thread will not draw again.

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::wrap::Span;
use super::{footer, tail};

const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const TICK: Duration = Duration::from_millis(80);

/// A running spinner.
#[derive(Debug)]
pub struct Spinner {
    active: Arc<Mutex<bool>>,
    thread: Option<JoinHandle<()>>,
}

/// Elapsed time as shown: `4s`, `1m 05s`.
pub fn elapsed(d: Duration) -> String {
    let secs = d.as_secs();
    if secs < 60 {
        format!("{secs}s")
    } else {
        format!("{}m {:02}s", secs / 60, secs % 60)
    }
}

impl Spinner {
    /// Starts drawing `label` (already neutralised) with the time since `since`, and with
    /// `live_tail`, the last line bash printed (see [`tail`]).
    pub fn start(label: &str, since: Instant, live_tail: bool) -> Spinner {
        let active = Arc::new(Mutex::new(true));
        let flag = active.clone();
        let label = label.to_owned();
        let thread = std::thread::spawn(move || {
            let mut frame = 0usize;
            loop {
                {
                    let showing = flag.lock().unwrap_or_else(|e| e.into_inner());
                    if !*showing {
                        return;
                    }
                    let mut text = format!(
                        "{} {} {}",
                        FRAMES[frame % FRAMES.len()],
                        label,
                        elapsed(since.elapsed())
                    );
                    if let Some(line) = live_tail.then(tail::current).flatten() {
                        text.push_str(" │ ");
                        text.push_str(&line);
                    }
                    footer::set_spinner(Some(vec![Span::styled(text, "2")]));
                }
                frame += 1;
                std::thread::sleep(TICK);
            }
        });
        Spinner {
            active,
            thread: Some(thread),
        }
    }

    /// Takes the spinner off the footer; nothing is drawn after this returns.
    pub fn stop(&mut self) {
        let mut showing = self.active.lock().unwrap_or_else(|e| e.into_inner());
        if *showing {
            *showing = false;
            footer::set_spinner(None);
        }
        drop(showing);
        // The thread exits at its next tick; it holds nothing that needs waiting for.
        self.thread.take();
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elapsed_reads_naturally() {
        assert_eq!(elapsed(Duration::from_millis(4_900)), "4s");
        assert_eq!(elapsed(Duration::from_secs(65)), "1m 05s");
    }
}
