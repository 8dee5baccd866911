//! What text output knows of the terminal it writes to: its width (for wrapping) and its height
//! (for deciding to page). `COLUMNS` and `LINES` win, as for `less` and ncurses; else the size
//! of the terminal on stdout; else nothing (piped output is not wrapped).

use std::io::IsTerminal;

/// The width to wrap text to: `COLUMNS` when it is a positive number, else the width of the
/// terminal on stdout, else `None` (stdout is a pipe or a file: no wrapping).
pub fn stdout_width() -> Option<usize> {
    env_size("COLUMNS").or_else(|| size().map(|(width, _)| width))
}

/// The height of the screen: `LINES` when it is a positive number, else the height of the
/// terminal on stdout, else `None`.
pub fn stdout_height() -> Option<usize> {
    env_size("LINES").or_else(|| size().map(|(_, height)| height))
}

/// Whether stdout is a terminal (the cursor line and the pager are for people).
pub fn stdout_is_terminal() -> bool {
    std::io::stdout().is_terminal()
}

fn env_size(name: &str) -> Option<usize> {
    std::env::var(name)
        .ok()?
        .trim()
        .parse::<usize>()
        .ok()
        .filter(|&n| n > 0)
}

fn size() -> Option<(usize, usize)> {
    let (terminal_size::Width(w), terminal_size::Height(h)) =
        terminal_size::terminal_size_of(std::io::stdout())?;
    Some((usize::from(w), usize::from(h)))
}
