//! A stand-in for the shell's chat window: where published commits become messages.

use std::collections::HashMap;

use tt_runtime::ChatCommitRequest;

/// Messages in order; a run's first commit adds a message, its later commits change it.
#[derive(Debug, Default)]
pub struct ChatWindow {
    messages: Vec<String>,
    /// Run id -> index of the message its commits write.
    message_of_run: HashMap<String, usize>,
    /// Message id -> the persistent state its run left (what the next run starts from).
    state_of_message: HashMap<String, String>,
}

impl ChatWindow {
    /// Publishes a commit (`replace` or `append` the run's message) and returns the message id
    /// the runtime records for it.
    pub fn publish(&mut self, commit: &ChatCommitRequest) -> String {
        let run = commit.run_id.to_string();
        let index = match self.message_of_run.get(&run) {
            Some(index) => *index,
            None => {
                self.messages.push(String::new());
                let index = self.messages.len() - 1;
                self.message_of_run.insert(run, index);
                index
            }
        };
        let message = &mut self.messages[index];
        if commit.mode == "append" {
            message.push_str(&commit.content);
        } else {
            *message = commit.content.clone();
        }
        (index + 1).to_string()
    }

    /// Binds a finished run's persistent state to the message it published, so a later run of
    /// this conversation can start from it.
    pub fn bind_state(&mut self, message_id: &str, state_id: &str) {
        self.state_of_message
            .insert(message_id.to_owned(), state_id.to_owned());
    }

    /// The persistent state bound to a message, if any.
    pub fn state_of(&self, message_id: &str) -> Option<&str> {
        self.state_of_message.get(message_id).map(String::as_str)
    }

    /// The messages, oldest first.
    pub fn messages(&self) -> &[String] {
        &self.messages
    }
}
