#[test]
fn effective_uid_is_the_second_field() {
    let status = "Name:\tpostgres\nUmask:\t0022\nUid:\t1000\t0\t0\t0\nGid:\t1000\t1000\t1000\t1000\n";
    assert_eq!(super::effective_uid(status), Some(0));
    assert_eq!(super::effective_uid("Name:\tx\n"), None);
    assert_eq!(super::effective_uid("Uid:\t1000\n"), None);
}
