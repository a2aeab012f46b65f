//! The files a build reads (kustomize's `filesys.FileSystem`), behind a trait so that the
//! loader's confinement is in one place.
