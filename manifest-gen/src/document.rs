//! One YAML document per object: what every manifest kind implements, and a multi-document file of several.

/// A Kubernetes object that writes itself as one YAML document, ended by `---`.
pub trait Manifest {
    /// Appends the object's document (ending in `---\n`) to `out`.
    fn write_yaml(&self, out: &mut String);

    /// The object's document alone.
    fn to_yaml(&self) -> String {
        let mut out = String::new();
        self.write_yaml(&mut out);
        out
    }
}

/// One multi-document file of `objects`, in order.
pub fn documents(objects: &[&dyn Manifest]) -> String {
    let mut out = String::new();
    for object in objects {
        object.write_yaml(&mut out);
    }
    out
}
