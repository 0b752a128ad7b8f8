//! The bundles of every built-in provider's example ControlPlane as
//! gardener-resource-manager reads them back: each Secret decodes (split at
//! `---`, each document parsed) to exactly the objects rendered into it, so
//! the keys a bundle carries — taken from the objects, which the controller's
//! take-over plan and `scion check` use instead of decoding the Secret — are
//! the keys GRM applies; and a bundle compared with itself matches.

mod support;

use std::path::PathBuf;

use scion::controller::controlplane::{MANAGED_RESOURCES, bundles, rendered_keys};
use scion::managedresources::compare::{compare, secret_data};
use scion::managedresources::{decode, takeover};
use scion::profile::Profile;
use support::render::render_example;

#[test]
fn every_bundle_decodes_to_its_objects_and_carries_their_keys() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for provider in scion::providers::BUILTIN_PROVIDERS {
        let profile = Profile::builtin(provider).expect("profile");
        let namespace = format!("shoot--dev--{provider}");
        let rendered = render_example(&profile, &root.join("examples/objects"), &namespace);
        let bundles = bundles(&namespace, &rendered).expect("bundles");
        for bundle in &bundles {
            let what = format!("{provider} {}", bundle.name);
            let (destination, ..) = MANAGED_RESOURCES
                .iter()
                .find(|m| m.1 == bundle.name)
                .expect("a ManagedResource of the table");
            let objects: Vec<_> = rendered
                .of(*destination)
                .iter()
                .map(|o| o.object.clone())
                .collect();
            let decoded = decode(&secret_data(&bundle.secret).expect("data")).expect(&what);
            assert_eq!(decoded, objects, "{what}");
            assert_eq!(bundle.keys, takeover::keys(&decoded), "{what}");
            let c = compare(
                bundle,
                &bundle.managed_resource,
                &[(bundle.secret_name.clone(), Some(bundle.secret.clone()))],
            )
            .expect(&what);
            assert!(c.matches() && c.same_secret, "{what}: {c:?}");
        }
        let [seed, shoot] = rendered_keys(&bundles);
        assert!(!seed.is_empty() && !shoot.is_empty(), "{provider}");
    }
}
