// The shipped playbooks and templates are embedded with include_dir!, which does not notice files
// added to those directories: rebuild when they change.
fn main() {
    println!("cargo:rerun-if-changed=playbooks");
    println!("cargo:rerun-if-changed=templates");
}
