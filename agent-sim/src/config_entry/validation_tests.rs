//! Table tests of decode and validation errors.
