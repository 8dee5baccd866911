//! The one decoder of the scripts' replies, whichever dialect wrote them: a file per part of
//! the wire format ([`crate::script`] describes it). Nothing here trusts the remote: a reply is
//! held to a bound derived from its request before it is parsed, and every number and path in
//! it is checked.

mod batch;
mod errors;
mod fields;
mod find_read;
mod frame;
mod hash;
mod listing;
mod payload;
mod ranges;
mod read_along;

pub use batch::{
    BatchRead, decode_read_batch, decode_read_many, read_many_reply_limit, whole_file_cap,
};
pub(super) use fields::find;
pub use find_read::{decode_find_read, decode_find_read_with, find_read_reply_limit};
pub use frame::{Frame, parse_frame};
pub use hash::{decode_hash_many, hash_many_reply_limit};
pub use listing::{ListReading, decode_list, decode_list_reading};
pub use payload::Encoding;
pub use ranges::{Aligned, aligned, decode_read, read_reply_limit};

#[cfg(all(test, unix))]
pub(super) use payload::decode_payload;
#[cfg(all(test, unix))]
pub(super) use read_along::{SizesBefore, split_read_along, stat_line};

#[cfg(test)]
mod tests;
