//! An image's modifications as the image builders apply them: bash
//! modifications only, each with its inline `script`, its `scripts` files
//! and its `ensure` commands. The local and packer image builders read
//! them here, so both accept and refuse the same modifications.

use csis_model::models::ItemView;
use csis_model::{Diagnostic, Value, Vct};

use crate::{HookContext, HookResult};

/// One bash modification of an image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BashMod {
    pub name: String,
    pub script: Option<String>,
    pub scripts: Vec<String>,
    pub ensure: Vec<String>,
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_seq)
        .map(|s| {
            s.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The modifications of image `image` in order, or the refusal of the
/// first one whose mod builder is not of type `bash`; `builder_type` names
/// the image builder in it (`the <builder_type> image builder applies bash
/// modifications only`).
pub fn bash_mods(
    ctx: &dyn HookContext,
    image: &str,
    view: &ItemView,
    builder_type: &str,
) -> HookResult<Vec<BashMod>> {
    let mut out = Vec::new();
    for m in &view.mods {
        let model = ctx
            .builder(Vct::ModBuilderModel, &m.builder)
            .map(|b| b.model)
            .unwrap_or_default();
        let name = &m.model.named.name;
        if model != "bash" {
            return Err(vec![Diagnostic::error(format!(
                "image '{image}': the {builder_type} image builder applies bash modifications only; '{name}' names mod builder '{}' of type '{model}'",
                m.builder
            ))]);
        }
        out.push(BashMod {
            name: name.to_string(),
            script: m
                .extra
                .get("script")
                .and_then(Value::as_str)
                .map(str::to_string),
            scripts: strings(m.extra.get("scripts")),
            ensure: strings(m.extra.get("ensure")),
        });
    }
    Ok(out)
}
