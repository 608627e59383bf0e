//! Text to [`Template`]: `${name}` substitution, then typing field by
//! field. Unknown keys and wrong types are refused with the node's
//! position; value rules (enumerations, patterns) are the validate module's.
//!
//! The field reader (keys, types, positions) is fields.rs; the top-level
//! sections are read in template.rs, systemConfig in system_config.rs.

use std::path::Path;

use csis_model::DocPath;
use csis_yaml::Positions;

use crate::Problem;
use crate::types::*;
use crate::vars::Variables;

mod fields;
mod system_config;
mod template;

/// Parse one template file; the positions come back for later messages.
pub(crate) fn parse_located(
    file: &Path,
    text: &str,
    vars: &Variables,
) -> Result<(Template, Positions), Vec<Problem>> {
    let (mut value, positions) = match csis_yaml::parse(text) {
        Ok(v) => v,
        Err(e) => {
            return Err(vec![Problem::error(
                file,
                e.span.line,
                e.span.col,
                e.message,
            )]);
        }
    };
    let mut rd = Reader {
        file,
        pos: &positions,
        problems: Vec::new(),
    };
    rd.substitute(&mut value, &DocPath::root(), vars);
    if !rd.problems.is_empty() {
        return Err(rd.problems);
    }
    let t = rd.template(&value);
    if rd.problems.is_empty() {
        Ok((t, positions))
    } else {
        Err(rd.problems)
    }
}

/// The state of one read: the file and positions refusals are placed by,
/// and the refusals so far. Its methods are in this module's files.
struct Reader<'a> {
    file: &'a Path,
    pos: &'a Positions,
    problems: Vec<Problem>,
}
