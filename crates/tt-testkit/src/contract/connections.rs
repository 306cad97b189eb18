//! Contract cases for `ConnectionRepository`: a document reads back as written, from a fresh
//! handle too (another host of the same store), and its replacement likewise; names list
//! sorted; a name that is not a storage segment is refused on write and never found; removing
//! says whether anything was there. Run with `connections_contract_tests!`.

use tt_domain::error_codes;

use tt_ports::ConnectionRepository;

/// One connection store under test.
pub type ConnectionsUnderTest = super::RepositoryUnderTest<dyn ConnectionRepository>;

contract_suite_macro! {
    /// Runs every `ConnectionRepository` contract case against `$factory`, an expression that
    /// yields a fresh [`ConnectionsUnderTest`] (it may `.await`).
    connections_contract_tests => connections_contract, connections {
        documents_read_back_from_another_handle_and_are_replaced,
        names_list_sorted_and_removal_says_what_was_there,
        names_that_are_no_storage_segment_are_refused,
    }
}

const LOCAL: &str = r#"{"connection": "openai:http://127.0.0.1:8080/v1", "model": "local"}"#;
const LOCAL_2: &str = r#"{"connection": "openai:http://127.0.0.1:8081/v1"}"#;

pub async fn documents_read_back_from_another_handle_and_are_replaced(s: ConnectionsUnderTest) {
    assert_eq!(s.repo.read_connection("local").await.unwrap(), None);
    s.repo.put_connection("local", LOCAL).await.unwrap();
    let other = (s.reopen)();
    assert_eq!(
        other.read_connection("local").await.unwrap().as_deref(),
        Some(LOCAL)
    );
    s.repo.put_connection("local", LOCAL_2).await.unwrap();
    assert_eq!(
        other.read_connection("local").await.unwrap().as_deref(),
        Some(LOCAL_2)
    );
}

pub async fn names_list_sorted_and_removal_says_what_was_there(s: ConnectionsUnderTest) {
    assert!(s.repo.list_connection_names().await.unwrap().is_empty());
    for name in ["remote", "local", "backup"] {
        s.repo.put_connection(name, LOCAL).await.unwrap();
    }
    assert_eq!(
        s.repo.list_connection_names().await.unwrap(),
        ["backup", "local", "remote"]
    );
    assert!(s.repo.remove_connection("local").await.unwrap());
    assert!(!s.repo.remove_connection("local").await.unwrap());
    let other = (s.reopen)();
    assert_eq!(other.read_connection("local").await.unwrap(), None);
    assert_eq!(
        other.list_connection_names().await.unwrap(),
        ["backup", "remote"]
    );
}

pub async fn names_that_are_no_storage_segment_are_refused(s: ConnectionsUnderTest) {
    for bad in ["../escape", "", "a/b", "a.b"] {
        let err = s.repo.put_connection(bad, LOCAL).await.unwrap_err();
        assert_eq!(
            err.code(),
            error_codes::AGENT_STORAGE_SEGMENT_INVALID,
            "{bad:?}"
        );
        assert_eq!(s.repo.read_connection(bad).await.unwrap(), None, "{bad:?}");
        assert!(!s.repo.remove_connection(bad).await.unwrap(), "{bad:?}");
    }
    assert!(s.repo.list_connection_names().await.unwrap().is_empty());
}
