//! Image, instance, storage, mod, group, user and state builder models, and
//! [`BaseBuilder`], the one type every core builder model reads into.

use serde::Serialize;

use crate::fields::Fields;
use crate::models::common::BuilderModel;
use crate::models::os::OsBuilderModel;
use crate::models::runtime::{CloudBuilderModel, ContainerBuilderModel, RuntimeBuilderModel};
use crate::vct::Vct;

/// BuilderModel plus `runtime` (fk RUNTIME_BUILDER_MODEL, default
/// `default`): the base of image, instance and storage builders.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuntimeEnabledBuilderModel {
    #[serde(flatten)]
    pub builder: BuilderModel,
    pub runtime: String,
}

impl RuntimeEnabledBuilderModel {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let builder = BuilderModel::read(f);
        RuntimeEnabledBuilderModel {
            builder,
            runtime: f.str_or("runtime", "default"),
        }
    }
}

/// `image_builders:` entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImageBuilderModel {
    #[serde(flatten)]
    pub base: RuntimeEnabledBuilderModel,
    pub default_machine_type: Option<String>,
}

impl ImageBuilderModel {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let base = RuntimeEnabledBuilderModel::read(f);
        ImageBuilderModel {
            base,
            default_machine_type: f.opt_str("default_machine_type"),
        }
    }
}

/// `instance_builders:` entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InstanceBuilderModel {
    #[serde(flatten)]
    pub base: RuntimeEnabledBuilderModel,
}

impl InstanceBuilderModel {
    pub fn read(f: &mut Fields<'_>) -> Self {
        InstanceBuilderModel {
            base: RuntimeEnabledBuilderModel::read(f),
        }
    }
}

/// `storage_builders:` entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StorageBuilderModel {
    #[serde(flatten)]
    pub base: RuntimeEnabledBuilderModel,
}

impl StorageBuilderModel {
    pub fn read(f: &mut Fields<'_>) -> Self {
        StorageBuilderModel {
            base: RuntimeEnabledBuilderModel::read(f),
        }
    }
}

/// `mod_builders:` entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModBuilderModel {
    #[serde(flatten)]
    pub builder: BuilderModel,
}

impl ModBuilderModel {
    pub fn read(f: &mut Fields<'_>) -> Self {
        ModBuilderModel {
            builder: BuilderModel::read(f),
        }
    }
}

/// `group_builders:` entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupBuilderModel {
    #[serde(flatten)]
    pub builder: BuilderModel,
}

impl GroupBuilderModel {
    pub fn read(f: &mut Fields<'_>) -> Self {
        GroupBuilderModel {
            builder: BuilderModel::read(f),
        }
    }
}

/// `state_backends:` entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StateBuilderModel {
    #[serde(flatten)]
    pub builder: BuilderModel,
}

impl StateBuilderModel {
    pub fn read(f: &mut Fields<'_>) -> Self {
        StateBuilderModel {
            builder: BuilderModel::read(f),
        }
    }
}

/// The placeholder an email template may hold for the builder's domain.
pub const EMAIL_DOMAIN_PLACEHOLDER: &str = "{{ builder.email_domain }}";

/// `user_builders:` entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UserBuilderModel {
    #[serde(flatten)]
    pub builder: BuilderModel,
    pub default_user_email_template: String,
    pub default_user_description_template: String,
    pub email_domain: Option<String>,
    /// A user's name must equal its email, case-insensitively.
    pub email_as_username: bool,
    /// [`UserBuilderModel::email_template`], folded once as the builder is
    /// read rather than for each of its users.
    #[serde(skip)]
    email_template: String,
}

impl UserBuilderModel {
    pub fn read(f: &mut Fields<'_>) -> Self {
        let builder = BuilderModel::read(f);
        let default_user_email_template =
            f.str_or("default_user_email_template", "{{ user.name }}");
        let default_user_description_template = f.str_or(
            "default_user_description_template",
            "User {{ user.name }} / {{ user.email }}",
        );
        let email_domain = f.opt_str("email_domain");
        let email_template = match &email_domain {
            Some(domain) => default_user_email_template.replace(EMAIL_DOMAIN_PLACEHOLDER, domain),
            None => default_user_email_template.clone(),
        };
        UserBuilderModel {
            builder,
            default_user_email_template,
            default_user_description_template,
            email_domain,
            email_as_username: f.bool_or("email_as_username", true),
            email_template,
        }
    }

    /// get_user_email_template(): the email template with the domain folded
    /// in for `{{ builder.email_domain }}`, before rendering.
    pub fn email_template(&self) -> &str {
        &self.email_template
    }
}

/// Every core builder model, as read from a builder list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum BaseBuilder {
    Runtime(RuntimeBuilderModel),
    Cloud(CloudBuilderModel),
    Container(ContainerBuilderModel),
    Os(OsBuilderModel),
    Image(ImageBuilderModel),
    Instance(InstanceBuilderModel),
    Storage(StorageBuilderModel),
    Mod(ModBuilderModel),
    Group(GroupBuilderModel),
    User(UserBuilderModel),
    State(StateBuilderModel),
}

impl BaseBuilder {
    /// The BuilderModel fields every builder has.
    pub fn common(&self) -> &BuilderModel {
        match self {
            BaseBuilder::Runtime(m) => &m.builder,
            BaseBuilder::Cloud(m) => &m.runtime.builder,
            BaseBuilder::Container(m) => &m.runtime.builder,
            BaseBuilder::Os(m) => &m.builder,
            BaseBuilder::Image(m) => &m.base.builder,
            BaseBuilder::Instance(m) => &m.base.builder,
            BaseBuilder::Storage(m) => &m.base.builder,
            BaseBuilder::Mod(m) => &m.builder,
            BaseBuilder::Group(m) => &m.builder,
            BaseBuilder::User(m) => &m.builder,
            BaseBuilder::State(m) => &m.builder,
        }
    }

    pub fn name(&self) -> &str {
        self.common().name()
    }

    pub fn kind(&self) -> BaseModelKind {
        match self {
            BaseBuilder::Runtime(_) => BaseModelKind::Runtime,
            BaseBuilder::Cloud(_) => BaseModelKind::Cloud,
            BaseBuilder::Container(_) => BaseModelKind::Container,
            BaseBuilder::Os(_) => BaseModelKind::Os,
            BaseBuilder::Image(_) => BaseModelKind::Image,
            BaseBuilder::Instance(_) => BaseModelKind::Instance,
            BaseBuilder::Storage(_) => BaseModelKind::Storage,
            BaseBuilder::Mod(_) => BaseModelKind::Mod,
            BaseBuilder::Group(_) => BaseModelKind::Group,
            BaseBuilder::User(_) => BaseModelKind::User,
            BaseBuilder::State(_) => BaseModelKind::State,
        }
    }

    /// The runtime foreign key of an image, instance or storage builder.
    /// Point a runtime-enabled builder at a runtime (the load canonicalizes
    /// `default` and aliases to the runtime builder's registered name).
    pub fn set_runtime(&mut self, name: &str) {
        match self {
            BaseBuilder::Image(m) => m.base.runtime = name.to_string(),
            BaseBuilder::Instance(m) => m.base.runtime = name.to_string(),
            BaseBuilder::Storage(m) => m.base.runtime = name.to_string(),
            _ => {}
        }
    }

    pub fn runtime(&self) -> Option<&str> {
        match self {
            BaseBuilder::Image(m) => Some(&m.base.runtime),
            BaseBuilder::Instance(m) => Some(&m.base.runtime),
            BaseBuilder::Storage(m) => Some(&m.base.runtime),
            _ => None,
        }
    }

    /// The runtime model of a runtime, cloud or container builder.
    pub fn runtime_model(&self) -> Option<&RuntimeBuilderModel> {
        match self {
            BaseBuilder::Runtime(m) => Some(m),
            BaseBuilder::Cloud(m) => Some(&m.runtime),
            BaseBuilder::Container(m) => Some(&m.runtime),
            _ => None,
        }
    }
}

/// Which core base model to read a builder entry with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BaseModelKind {
    Runtime,
    Cloud,
    Container,
    Os,
    Image,
    Instance,
    Storage,
    Mod,
    Group,
    User,
    State,
}

impl BaseModelKind {
    pub const ALL: [BaseModelKind; 11] = [
        BaseModelKind::Runtime,
        BaseModelKind::Cloud,
        BaseModelKind::Container,
        BaseModelKind::Os,
        BaseModelKind::Image,
        BaseModelKind::Instance,
        BaseModelKind::Storage,
        BaseModelKind::Mod,
        BaseModelKind::Group,
        BaseModelKind::User,
        BaseModelKind::State,
    ];

    /// Read the base model's fields (the caller finishes the reader).
    pub fn read(self, f: &mut Fields<'_>) -> BaseBuilder {
        match self {
            BaseModelKind::Runtime => BaseBuilder::Runtime(RuntimeBuilderModel::read(f)),
            BaseModelKind::Cloud => BaseBuilder::Cloud(CloudBuilderModel::read(f)),
            BaseModelKind::Container => BaseBuilder::Container(ContainerBuilderModel::read(f)),
            BaseModelKind::Os => BaseBuilder::Os(OsBuilderModel::read(f)),
            BaseModelKind::Image => BaseBuilder::Image(ImageBuilderModel::read(f)),
            BaseModelKind::Instance => BaseBuilder::Instance(InstanceBuilderModel::read(f)),
            BaseModelKind::Storage => BaseBuilder::Storage(StorageBuilderModel::read(f)),
            BaseModelKind::Mod => BaseBuilder::Mod(ModBuilderModel::read(f)),
            BaseModelKind::Group => BaseBuilder::Group(GroupBuilderModel::read(f)),
            BaseModelKind::User => BaseBuilder::User(UserBuilderModel::read(f)),
            BaseModelKind::State => BaseBuilder::State(StateBuilderModel::read(f)),
        }
    }

    /// The classification the model registers under.
    pub fn classification(self) -> Vct {
        match self {
            BaseModelKind::Runtime => Vct::RuntimeBuilderModel,
            BaseModelKind::Cloud => Vct::CloudBuilderModel,
            BaseModelKind::Container => Vct::ContainerBuilderModel,
            BaseModelKind::Os => Vct::OsBuilderModel,
            BaseModelKind::Image => Vct::ImageBuilderModel,
            BaseModelKind::Instance => Vct::InstanceBuilderModel,
            BaseModelKind::Storage => Vct::StorageBuilderModel,
            BaseModelKind::Mod => Vct::ModBuilderModel,
            BaseModelKind::Group => Vct::GroupBuilderModel,
            BaseModelKind::User => Vct::UserBuilderModel,
            BaseModelKind::State => Vct::StateBackendModel,
        }
    }

    /// The kind registered under a builder-model classification.
    pub fn from_classification(v: Vct) -> Option<BaseModelKind> {
        BaseModelKind::ALL
            .into_iter()
            .find(|k| k.classification() == v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::testutil::*;

    #[test]
    fn image_builder_defaults_runtime_and_reads_machine_type() {
        let m = map(&[("name", plain("packer")), ("type", plain("packer"))]);
        let (b, diags) = read(&m, |f| BaseModelKind::Image.read(f));
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(b.runtime(), Some("default"));
        assert_eq!(b.name(), "packer");
        assert_eq!(b.kind(), BaseModelKind::Image);
        assert!(b.runtime_model().is_none());
        let BaseBuilder::Image(i) = b else {
            panic!("not an image builder")
        };
        assert_eq!(i.default_machine_type, None);
    }

    #[test]
    fn user_builder_defaults_and_email_template() {
        let m = map(&[("name", plain("okta")), ("type", plain("okta"))]);
        let (u, diags) = read(&m, UserBuilderModel::read);
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(u.default_user_email_template, "{{ user.name }}");
        assert_eq!(
            u.default_user_description_template,
            "User {{ user.name }} / {{ user.email }}"
        );
        assert!(u.email_as_username);
        assert_eq!(u.email_template(), "{{ user.name }}");

        let m = map(&[
            ("name", plain("okta")),
            ("type", plain("okta")),
            (
                "default_user_email_template",
                quoted("{{ user.name }}@{{ builder.email_domain }}"),
            ),
            ("email_domain", plain("example.invalid")),
            ("email_as_username", plain("false")),
        ]);
        let (u, _) = read(&m, UserBuilderModel::read);
        assert_eq!(u.email_template(), "{{ user.name }}@example.invalid");
        assert!(!u.email_as_username);
    }

    #[test]
    fn classification_round_trip() {
        for k in BaseModelKind::ALL {
            assert_eq!(
                BaseModelKind::from_classification(k.classification()),
                Some(k)
            );
        }
        assert_eq!(
            BaseModelKind::Cloud.classification(),
            Vct::CloudBuilderModel
        );
        assert_eq!(
            BaseModelKind::State.classification(),
            Vct::StateBackendModel
        );
    }

    #[test]
    fn runtime_model_of_cloud_and_mod_parameters_refused() {
        let m = map(&[
            ("name", plain("local")),
            ("type", plain("container")),
            ("default_machine_type", plain("small")),
        ]);
        let (b, diags) = read(&m, |f| BaseModelKind::Container.read(f));
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(
            b.runtime_model().map(|r| r.default_machine_type.as_str()),
            Some("small")
        );

        let m = map(&[
            ("name", plain("ansible")),
            ("type", plain("ansible")),
            ("parameters", mapv(&[])),
        ]);
        let (_, diags) = read(&m, |f| BaseModelKind::Mod.read(f));
        assert_eq!(
            errors(&diags),
            vec![e(
                "Owner 'x' declares 'parameters'; builder module inputs moved to 'variables:' -- use 'variables:'",
                "things[0].parameters"
            )]
        );
    }
}
