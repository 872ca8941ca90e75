use super::is_local_exhaustion;

#[test]
fn running_out_of_descriptors_is_local_and_a_refused_connection_is_not() {
    let emfile = std::io::Error::from_raw_os_error(rustix::io::Errno::MFILE.raw_os_error());
    let enfile = std::io::Error::from_raw_os_error(rustix::io::Errno::NFILE.raw_os_error());
    let refused = std::io::Error::from_raw_os_error(rustix::io::Errno::CONNREFUSED.raw_os_error());
    assert!(is_local_exhaustion(&emfile));
    assert!(is_local_exhaustion(&enfile));
    assert!(!is_local_exhaustion(&refused));
    assert!(!is_local_exhaustion(&std::io::Error::other("timed out")));
}
