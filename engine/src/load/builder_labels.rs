//! What messages call the entries of each builder list of cfg/ ("Image
//! builder", "OS builder"): the words the builder declarations, the
//! string stage and the checks name a builder by.

use csis_model::Vct;

/// What messages call a builder list's entries.
pub(crate) fn list_label(vct: Vct) -> &'static str {
    match vct {
        Vct::RuntimeBuilderModel => "Runtime builder",
        Vct::StateBackendModel => "State backend",
        Vct::ModBuilderModel => "Mod builder",
        Vct::StorageBuilderModel => "Storage builder",
        Vct::GroupBuilderModel => "Group builder",
        Vct::UserBuilderModel => "User builder",
        Vct::ImageBuilderModel => "Image builder",
        Vct::OsBuilderModel => "OS builder",
        Vct::InstanceBuilderModel => "Instance builder",
        _ => "Builder",
    }
}

/// [`list_label`] as it reads inside a sentence ("image builder", "OS
/// builder").
pub(crate) fn label_in_sentence(vct: Vct) -> String {
    csis_model::fields::in_sentence(list_label(vct))
}
