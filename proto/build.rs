fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "stera/v1/stera.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], ["."])?;
    tonic_prost_build::configure().compile_fds(descriptors)?;
    Ok(())
}
