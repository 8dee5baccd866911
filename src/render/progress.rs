//! Progress on stderr for long work — multi-host `check` and `ls`, an `--all` read into a pipe
//! or file, a read before its first output (a database copied and queried): one line that
//! updates in place and is erased when the work is done. Nothing at all is drawn when stderr
//! is not a terminal, so logs, pipes and cron mail never hold it.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressFinish, ProgressStyle};

/// How often a spinner turns (and a line is redrawn) while nothing else moves it.
const TICK: Duration = Duration::from_millis(120);

/// How long a read may take before its progress line is drawn.
const DELAY: Duration = Duration::from_millis(500);

/// A progress line, or nothing when stderr is not a terminal. Clones share the line; it is
/// erased when [`Progress::finish`] is called or the last clone is dropped.
#[derive(Debug, Clone)]
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// Nothing drawn.
    pub fn hidden() -> Progress {
        Progress { bar: None }
    }

    /// `what` counted in `len` steps (`checking hosts 2/5`), when stderr is a terminal.
    pub fn steps(what: &str, len: u64) -> Progress {
        let style = ProgressStyle::with_template("{spinner} {msg} {pos}/{len}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        Progress::start(ProgressBar::new(len), style, what)
    }

    /// `what` with a running count of records (`reading local:3f1c2a… 1200 records`), when
    /// stderr is a terminal.
    pub fn records(what: &str) -> Progress {
        let style = ProgressStyle::with_template("{spinner} {msg} {pos} records")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        Progress::start(ProgressBar::no_length(), style, what)
    }

    /// [`Progress::records`], drawn only if the work is still going after [`DELAY`]: a read
    /// that is over sooner (nearly all) never flashes a line.
    pub fn records_if_slow(what: &str) -> Progress {
        Progress::if_slow(what, "{spinner} {msg} {pos} records")
    }

    /// A spinner and `what`, drawn only if the work is still going after [`DELAY`].
    pub fn spinner_if_slow(what: &str) -> Progress {
        Progress::if_slow(what, "{spinner} {msg}")
    }

    fn if_slow(what: &str, template: &str) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress::hidden();
        }
        let style = ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden())
            .with_finish(ProgressFinish::AndClear)
            .with_style(style)
            .with_message(clankie_model::sanitize::sanitize_line(what));
        let weak = bar.downgrade();
        // A thread, not a task: the line must turn up even while the runtime is busy.
        std::thread::spawn(move || {
            std::thread::sleep(DELAY);
            if let Some(bar) = weak.upgrade()
                && !bar.is_finished()
            {
                bar.set_draw_target(ProgressDrawTarget::stderr());
                bar.enable_steady_tick(TICK);
            }
        });
        Progress { bar: Some(bar) }
    }

    fn start(bar: ProgressBar, style: ProgressStyle, what: &str) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress::hidden();
        }
        // However the work ends (an error, a panic), the last clone dropped erases the line.
        let bar = bar.with_finish(ProgressFinish::AndClear);
        bar.set_draw_target(ProgressDrawTarget::stderr());
        bar.set_style(style);
        bar.set_message(clankie_model::sanitize::sanitize_line(what));
        // Drawn at once, then kept turning: a step may take seconds.
        bar.tick();
        bar.enable_steady_tick(TICK);
        Progress { bar: Some(bar) }
    }

    /// `n` more steps or records done.
    pub fn inc(&self, n: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(n);
        }
    }

    /// Runs `f` (which writes to stderr) with the line erased, then draws it again.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }

    /// Erases the line for good.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
