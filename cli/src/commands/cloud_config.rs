//! `csis cloud-config check`: user-data documents checked as
//! instance-setup reads them (no configuration tree needed).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use csis_engine::db::system::OsSystem;
use csis_engine::workspace::read_named;

#[derive(Subcommand)]
pub enum CloudConfigCommand {
    /// Report what instance-setup would refuse, skip or ignore in each
    /// file, with line and column; exit 1 when a document or an entry of
    /// one is refused.
    Check {
        /// Refuse what would otherwise be ignored (instance-setup --offline).
        #[arg(long)]
        offline: bool,
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

/// `max_file_size`: `--max-file-size` (or CSIS_MAX_FILE_SIZE), the limit
/// the tree load reads under.
pub fn cloud_config(command: &CloudConfigCommand, max_file_size: u64) -> ExitCode {
    match command {
        CloudConfigCommand::Check { offline, files } => {
            cloud_config_check(files, *offline, max_file_size)
        }
    }
}

/// `csis cloud-config check`: every finding as `file:line:col: level:
/// message`, then one summary line per file.
fn cloud_config_check(files: &[PathBuf], offline: bool, max_file_size: u64) -> ExitCode {
    use csis_cloud_config::{Severity, check};
    let mut refused_any = false;
    for file in files {
        let shown = file.display();
        // Under the tree's limits on input: a FIFO or a device (it read
        // /dev/zero until memory ran out) is refused unopened, a file over
        // the limit unread.
        let text = match read_named(&OsSystem, file, max_file_size) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: reading {shown}: {e}");
                refused_any = true;
                continue;
            }
        };
        let findings = check(text.as_bytes(), offline);
        let refused = findings
            .iter()
            .filter(|f| f.severity == Severity::Refused)
            .count();
        for f in &findings {
            let level = match f.severity {
                Severity::Refused => "error",
                Severity::Skipped => "warning",
            };
            csis_plugin_api::outln!("{shown}:{}:{}: {level}: {}", f.line, f.col, f.message);
        }
        csis_plugin_api::outln!(
            "{shown}: {} ({refused} refused, {} reported)",
            if refused == 0 { "ok" } else { "refused" },
            findings.len() - refused
        );
        refused_any |= refused > 0;
    }
    ExitCode::from(u8::from(refused_any))
}
