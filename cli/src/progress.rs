//! A run as a person watches it: every line of the log on stderr the
//! moment the engine logs it, and, on a terminal only, a progress bar of
//! the real run's steps (done/total, elapsed, the step now running) below
//! them. Piped, redirected or in CI the output is the plain lines alone.

use std::ffi::OsStr;
use std::io::IsTerminal;
use std::time::Duration;

use csis_engine::run::{Level, Progress, RunLog};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Whether a run may draw a progress bar: stderr is a terminal, `CI` is
/// unset (or empty) and `TERM` is not `dumb`.
pub fn wanted() -> bool {
    let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
    std::io::stderr().is_terminal()
        && !set("CI")
        && std::env::var_os("TERM").as_deref() != Some(OsStr::new("dumb"))
}

/// What `csis run` hands the engine to hear the run.
pub struct RunView {
    /// Whether a bar may be drawn at all.
    bar_wanted: bool,
    /// The bar, from the first step of the apply to its end.
    bar: Option<ProgressBar>,
}

impl RunView {
    pub fn new(bar_wanted: bool) -> RunView {
        RunView {
            bar_wanted,
            bar: None,
        }
    }

    /// Take the bar off the screen (a run that stops early leaves one).
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }

    fn bar(&mut self, total: usize) -> &ProgressBar {
        self.bar.get_or_insert_with(|| {
            let bar =
                ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
            // The template is fixed and known good; the default style is
            // the fallback all the same.
            if let Ok(style) = ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] step {pos}/{len} {wide_msg}",
            ) {
                bar.set_style(style);
            }
            // Elapsed time and the spinner move while a step is silent.
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        })
    }
}

impl RunLog for RunView {
    fn line(&mut self, level: Level, line: String) {
        let text = match level {
            Level::Info => line,
            Level::Warn => format!("warning: {line}"),
            Level::Error => format!("error: {line}"),
        };
        // Above the bar, so the two never tear each other.
        match &self.bar {
            Some(bar) => bar.println(text),
            None => eprintln!("{text}"),
        }
    }

    fn progress(&mut self, progress: &Progress) {
        if !self.bar_wanted {
            return;
        }
        match &progress.current {
            Some(current) => {
                let bar = self.bar(progress.total);
                bar.set_length(progress.total as u64);
                bar.set_position(progress.done as u64);
                bar.set_message(current.clone());
            }
            None => self.finish(),
        }
    }
}
