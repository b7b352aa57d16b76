//! Manifests read into the YAML layer's node tree (`yaml::node`), which keeps the line of every
//! node and every mapping key, so that a finding points at the key a user wrote: a manifest is
//! read with YAML 1.1 booleans, as kubectl's YAML (go-yaml) reads it, several documents a file.

pub use crate::yaml::node::Node;

/// The documents of a multi-document YAML text, empty ones left out; a YAML error as its line
/// and message.
pub fn documents(text: &str) -> Result<Vec<Node>, (usize, String)> {
    let options = serde_saphyr::options! {
        strict_booleans: false,
        with_snippet: false,
    };
    serde_saphyr::from_multiple_with_options::<Node>(text, options).map_err(|e| {
        let line = e.location().map_or(1, |l| l.line() as usize).max(1);
        let message = e.to_string();
        // serde-saphyr appends "at line X column Y": the line is said on its own.
        let message = message.find(" at line ").map_or(message.clone(), |i| message[..i].to_string());
        (line, message)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_values_keep_their_lines_across_documents() {
        let docs = documents("a: 1\n---\n# c\nkind: Pod\nspec:\n  items:\n    - name: x\n---\n").unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].key_line("a"), 1);
        assert_eq!(docs[1].key_line("kind"), 4);
        let item = &docs[1].at(&["spec", "items"]).unwrap().items()[0];
        assert_eq!(item.key_line("name"), 7);
        assert_eq!(item.get("name").unwrap().as_str(), Some("x"));
        // A YAML error at the line of what is unclosed.
        assert_eq!(documents("a: 1\nb: [\n").unwrap_err().0, 2);
    }
}
