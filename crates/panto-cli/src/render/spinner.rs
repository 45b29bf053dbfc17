//! The waiting indicator shown until the model's first token.
//!
//! It draws from its own thread, so it animates while the turn's future waits on the network. A
//! mutex around "is it showing" makes stopping exact: once [`Spinner::stop`] returns, the line is
//! cleared and the thread will not draw again, so the text that follows lands on a clean line.

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::Screen;

const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const TICK: Duration = Duration::from_millis(80);

/// A running waiting indicator.
#[derive(Debug)]
pub struct Spinner {
    active: Arc<Mutex<bool>>,
    screen: Screen,
    thread: Option<JoinHandle<()>>,
}

impl Spinner {
    /// Starts drawing `label` with an elapsed-seconds counter.
    pub fn start(screen: Screen, label: &str) -> Spinner {
        let active = Arc::new(Mutex::new(true));
        let flag = active.clone();
        let label = label.to_owned();
        let thread = std::thread::spawn(move || {
            let started = Instant::now();
            let mut frame = 0usize;
            loop {
                {
                    let showing = flag.lock().unwrap_or_else(|e| e.into_inner());
                    if !*showing {
                        return;
                    }
                    let text = format!(
                        "\r{} {} {}",
                        FRAMES[frame % FRAMES.len()],
                        label,
                        screen.deco.dim(&format!("{}s", started.elapsed().as_secs()))
                    );
                    screen.deco_raw(&screen.deco.dim(&text));
                }
                frame += 1;
                std::thread::sleep(TICK);
            }
        });
        Spinner {
            active,
            screen,
            thread: Some(thread),
        }
    }

    /// Clears the indicator; nothing is drawn after this returns.
    pub fn stop(&mut self) {
        let mut showing = self.active.lock().unwrap_or_else(|e| e.into_inner());
        if *showing {
            *showing = false;
            self.screen.deco_raw("\r\x1b[K");
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
