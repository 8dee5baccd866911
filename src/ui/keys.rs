//! The view's keys, in one table: the `?` help screen, `ui --help` and the man page all print
//! it, so the three never disagree.

/// Each key of the view (as its help names it) and what it does, by screen.
pub const KEYS: &[(&str, &[(&str, &str)])] = &[
    (
        "session list",
        &[
            ("j k ↓ ↑", "move down, up"),
            ("PgDn PgUp", "a page down, up"),
            ("g G", "first, last session"),
            ("Enter", "open the session"),
            ("/ or typing", "filter by title, project, harness, host"),
            ("Esc", "clear the filter"),
            ("s", "search every host (grep): its hits listed"),
            (
                "F",
                "follow every session of the selected session's host (or of the host the filter names)",
            ),
            ("q", "quit"),
        ],
    ),
    (
        "search hits",
        &[
            ("j k ↓ ↑", "move down, up"),
            ("PgDn PgUp", "a page down, up"),
            ("g G", "first, last hit"),
            ("Enter", "open the session at the hit"),
            ("Esc", "stop the search; then back to the list"),
            ("s /", "search again"),
            ("q", "back to the list"),
        ],
    ),
    (
        "host follow",
        &[
            ("j k ↓ ↑", "a line down, up"),
            ("Space b", "a page down, up"),
            ("g G", "first line, the end (new records)"),
            ("q Esc", "stop following, back to the list"),
        ],
    ),
    (
        "session",
        &[
            ("j ↓ e Enter", "a line down"),
            ("k ↑ y", "a line up (older records load above the first)"),
            ("Space f PgDn", "a page down"),
            ("b PgUp", "a page up"),
            ("d u", "half a page down, up"),
            ("g G", "the session's first, last record"),
            ("t", "jump to a time (2h, today, 2026-12-01, RFC 3339)"),
            ("/ n N", "search, next and previous hit"),
            ("F", "follow: stay at the end as records arrive"),
            ("1 2 3 4", "show or hide user, assistant, tools, thinking"),
            (
                "o",
                "open or fold the first long result or thinking on screen",
            ),
            ("O", "open every fold; again, fold them all"),
            ("c", "copy the resume command (OSC 52; also shown)"),
            ("q Esc", "back to the list"),
        ],
    ),
    (
        "anywhere",
        &[("?", "this help"), ("wheel", "scroll"), ("Ctrl-C", "quit")],
    ),
];

/// The key table as plain text, one key a line under each screen's name (for `--help`).
pub fn help_text() -> String {
    let mut text = String::from("Keys:\n");
    for (screen, keys) in KEYS {
        text.push_str(&format!("  {screen}:\n"));
        for (key, what) in *keys {
            text.push_str(&format!("    {key:<14} {what}\n"));
        }
    }
    text
}
