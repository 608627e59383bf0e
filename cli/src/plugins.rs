//! The plugins this binary links: the registry every tree-reading
//! command builds is assembled from this list.

use csis_plugin_api::Plugin;

/// The plugins this binary links, in registration order.
pub fn plugins() -> Vec<&'static dyn Plugin> {
    vec![
        &csis_plugin_dummy::DummyPlugin,
        &csis_plugin_local::LocalPlugin,
        &csis_plugin_aws::AwsPlugin,
        &csis_plugin_gce::GcePlugin,
        &csis_plugin_packer::PackerPlugin,
        &csis_plugin_tofu::TofuPlugin,
        &csis_plugin_ict::IctPlugin,
    ]
}
