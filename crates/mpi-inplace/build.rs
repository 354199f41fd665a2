//! Compiles the C shim with the same MPI that `mpi-sys` finds, so
//! `MPI_IN_PLACE` is the constant of the library we link against.
fn main() {
    println!("cargo:rerun-if-changed=src/in_place.c");
    println!("cargo:rerun-if-env-changed=MPICC");
    let lib = build_probe_mpi::probe().unwrap_or_else(|errors| {
        for (i, error) in errors.iter().enumerate() {
            println!("cargo:warning=MPI probe {}: {error}", i + 1);
        }
        panic!("no MPI library found: install libopenmpi-dev (or set MPICC)");
    });
    let mut build = cc::Build::new();
    build.file("src/in_place.c");
    match lib.mpicc {
        Some(mpicc) => {
            build.compiler(mpicc);
        }
        None => {
            for dir in &lib.include_paths {
                build.include(dir);
            }
        }
    }
    build.compile("collbench_mpi_inplace");
}
