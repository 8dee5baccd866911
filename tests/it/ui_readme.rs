//! README.md's screen of `clankie-read ui` is what the view draws today: `scripts/ui-screen`
//! runs this build's view in a tmux pane of 100×30 over the Claude fixtures, opens the session
//! `short` from the list, and prints the pane (`tmux capture-pane -p`); the README's block under
//! "Looking instead of typing" must be that screen, line for line. `scripts/ui-screen --write`
//! puts a new screen there. tmux is installed by `.ci/install-deps`; under `CI=true` a missing
//! tmux fails the test.

use std::path::Path;
use std::process::Command;

use crate::common::require_tool;
use crate::support::BIN;

/// The text of the first fenced block after the `ui` section's heading.
fn readme_screen(readme: &str) -> &str {
    let heading = readme
        .find("## Looking instead of typing: `ui`")
        .expect("README.md has the ui section");
    let open = heading
        + readme[heading..]
            .find("```\n")
            .expect("a block in the ui section")
        + 4;
    let close = open + readme[open..].find("```\n").expect("the block's end");
    &readme[open..close]
}

#[test]
fn ui_the_readme_shows_the_screen_the_view_draws() {
    if !require_tool("tmux") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(root.join("scripts/ui-screen"))
        .args(["--exe", BIN])
        .output()
        .expect("run scripts/ui-screen");
    assert!(
        out.status.success(),
        "scripts/ui-screen failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let drawn = String::from_utf8(out.stdout).unwrap();
    assert!(drawn.contains("── ") && drawn.contains("q back"), "{drawn}");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert_eq!(
        readme_screen(&readme),
        drawn,
        "README.md's ui screen is not what the view draws: run scripts/ui-screen --write"
    );
}
