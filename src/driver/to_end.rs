//! Reading to the end: pages of a session read one after another from each page's cursor
//! until one says no complete record follows (`check`, every `--follow` poll); and one page
//! taken whole, its streamed records in it.

use clankie_engine::cursor::Cursor;
use clankie_engine::page::{Mode, Page, PageRequest};
use clankie_engine::session::SessionFile;
use clankie_host::Host;
use clankie_model::limits::MAX_LIMIT;

use super::{DriverError, Reader};

impl<'h, H: Host> Reader<'h, H> {
    /// Reads pages until one says no complete record follows (`more` false): `first`, then pages
    /// of [`MAX_LIMIT`] records from each page's cursor, with `first`'s `strict` and `redact`.
    /// `on_page` sees each page, records streamed by `--all` included, and may take its records;
    /// an error it returns ends the loop. Returns the last page's cursor.
    pub async fn read_to_end<E: From<DriverError>>(
        &self,
        session: &SessionFile,
        first: PageRequest,
        on_page: impl FnMut(&mut Page) -> Result<(), E>,
    ) -> Result<Cursor, E> {
        self.read_to_end_from(session, first, None, on_page).await
    }

    /// [`Reader::read_to_end`] whose first page is `in_hand` when given (paged already from
    /// what was read ahead, [`InHand::page`]): only the pages after it are read.
    ///
    /// [`InHand::page`]: super::InHand::page
    pub async fn read_to_end_from<E: From<DriverError>>(
        &self,
        session: &SessionFile,
        first: PageRequest,
        mut in_hand: Option<Page>,
        mut on_page: impl FnMut(&mut Page) -> Result<(), E>,
    ) -> Result<Cursor, E> {
        let (strict, redact) = (first.strict, first.redact);
        let mut request = first;
        loop {
            let mut page = match in_hand.take() {
                Some(page) => page,
                None => self.read_page_whole(session, request).await?,
            };
            on_page(&mut page)?;
            if !page.more {
                return Ok(page.cursor);
            }
            request = PageRequest {
                mode: Mode::Since(page.cursor),
                limit: MAX_LIMIT,
                strict,
                redact,
            };
        }
    }

    /// One page, as [`Reader::read_page`] reads it, with the records `--all` streams put back
    /// in it (first), redacted as `request` asks: for a caller that takes a page at once.
    pub async fn read_page_whole(
        &self,
        session: &SessionFile,
        request: PageRequest,
    ) -> Result<Page, DriverError> {
        let redact = request.redact;
        let mut streamed = Vec::new();
        let mut page = self
            .read_page(session, request, |records| streamed.extend(records))
            .await?;
        if !streamed.is_empty() {
            // Handed over unredacted for a caller that redacts them: this one is that caller
            // here.
            if self.streams_unredacted() && redact {
                clankie_engine::redact::redact_records(&mut streamed);
            }
            streamed.append(&mut page.records);
            page.records = streamed;
        }
        Ok(page)
    }
}
