//! Classifications (VCT): what a model or builder class is registered under.

use std::fmt;

macro_rules! vct {
    ($($variant:ident => $value:literal,)*) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Vct { $($variant,)* }

        impl Vct {
            pub const ALL: &'static [Vct] = &[$(Vct::$variant,)*];

            /// The classification's value, as the spec's table writes it.
            pub fn as_str(self) -> &'static str {
                match self { $(Vct::$variant => $value,)* }
            }

            pub fn parse(s: &str) -> Option<Vct> {
                match s { $($value => Some(Vct::$variant),)* _ => None }
            }
        }
    };
}

vct! {
    Unclassified => "__NMC__",
    RuntimeBuilderModel => "runtime_builder_model",
    RuntimeBuilder => "runtime_builder",
    CloudBuilderModel => "cloud_builder_model",
    CloudBuilder => "cloud_builder",
    ContainerBuilderModel => "container_builder_model",
    ContainerBuilder => "container_builder",
    UserBuilderModel => "user_builder_model",
    UserBuilder => "user_builder",
    GroupBuilderModel => "group_builder_model",
    GroupBuilder => "group_builder",
    OsBuilderModel => "os_builder_model",
    OsBuilder => "os_builder",
    OsImageBuilderSubconfigModel => "os_image_builder_subconfig_model",
    OsImageBuilderSubconfig => "os_image_builder_subconfig",
    ImageBuilderModel => "image_builder_model",
    ImageBuilder => "image_builder",
    ImageImageBuilderSubconfigModel => "image_image_builder_subconfig_model",
    StorageMappingItemModel => "storage_mapping_item_model",
    ModBuilderModel => "mod_builder_model",
    ModBuilder => "mod_builder",
    ModBuilderItemModel => "mod_builder_item_model",
    InstanceBuilderModel => "instance_builder_model",
    InstanceBuilder => "instance_builder",
    StorageBuilderModel => "storage_builder_model",
    StorageBuilder => "storage_builder",
    StateBackendModel => "state_backend_model",
    StateBackend => "state_backend",
    ExecutableModel => "executable_model",
    VersionChecker => "version_checker",
    BaseImageModel => "base_image_model",
    ImageModel => "image_model",
    InstanceModel => "instance_model",
    GroupModel => "group_model",
    UserModel => "user_model",
    StorageModel => "storage_model",
    ModModel => "mod_model",
    SourceModelModel => "source_model_model",
    ResolvedImageModel => "resolved_image_model",
    ProviderSpecificImage => "provider_specific_image",
}

impl Vct {
    /// Cloud and container models register as runtimes, so a
    /// `runtime_builders:` entry's type may name either.
    pub fn sanitize(self) -> Vct {
        match self {
            Vct::CloudBuilderModel | Vct::ContainerBuilderModel => Vct::RuntimeBuilderModel,
            Vct::CloudBuilder | Vct::ContainerBuilder => Vct::RuntimeBuilder,
            other => other,
        }
    }

    /// The builder classification of a builder-model classification.
    pub fn builder(self) -> Option<Vct> {
        Some(match self.sanitize() {
            Vct::RuntimeBuilderModel => Vct::RuntimeBuilder,
            Vct::UserBuilderModel => Vct::UserBuilder,
            Vct::GroupBuilderModel => Vct::GroupBuilder,
            Vct::OsBuilderModel => Vct::OsBuilder,
            Vct::ImageBuilderModel => Vct::ImageBuilder,
            Vct::ModBuilderModel => Vct::ModBuilder,
            Vct::InstanceBuilderModel => Vct::InstanceBuilder,
            Vct::StorageBuilderModel => Vct::StorageBuilder,
            Vct::StateBackendModel => Vct::StateBackend,
            _ => return None,
        })
    }
}

impl fmt::Display for Vct {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The builder declaration lists of cfg/, in the order the loader structures
/// them, with the classification each list's entries register under.
pub const BUILDER_KEYS: [(&str, Vct); 9] = [
    ("runtime_builders", Vct::RuntimeBuilderModel),
    ("state_backends", Vct::StateBackendModel),
    ("mod_builders", Vct::ModBuilderModel),
    ("storage_builders", Vct::StorageBuilderModel),
    ("group_builders", Vct::GroupBuilderModel),
    ("user_builders", Vct::UserBuilderModel),
    ("image_builders", Vct::ImageBuilderModel),
    ("os_builders", Vct::OsBuilderModel),
    ("instance_builders", Vct::InstanceBuilderModel),
];

/// The cfg/ list a classification's builders are declared under
/// (`group_builders` for group builders).
pub fn builder_list_key(vct: Vct) -> Option<&'static str> {
    BUILDER_KEYS
        .iter()
        .find(|(_, v)| *v == vct.sanitize())
        .map(|(key, _)| *key)
}

/// The OS families (OSFamilies).
pub const OS_FAMILIES: [&str; 10] = [
    "rhel",
    "ubuntu",
    "debian",
    "fedora",
    "opensuse",
    "suse",
    "rocky-linux",
    "alma-linux",
    "centos",
    "centos-stream",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cloud_and_container_sanitize_to_runtime() {
        assert_eq!(Vct::CloudBuilderModel.sanitize(), Vct::RuntimeBuilderModel);
        assert_eq!(Vct::ContainerBuilder.sanitize(), Vct::RuntimeBuilder);
        assert_eq!(Vct::ImageModel.sanitize(), Vct::ImageModel);
        assert_eq!(Vct::parse("os_builder_model"), Some(Vct::OsBuilderModel));
    }
}
