package feeds

import (
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/source"
)

// PageRereader is implemented by a fetcher whose kind asks for page n of
// layer the same way whichever page its fetch started at (WFS: startIndex
// n × page_size), so that a resumed poll can read the page before its
// checkpoint again and compare it with what it staged (fetchResumed).
// A kind without it resumes at its checkpoint's page as it always did (or
// starts over, a Restarter, or proves its pages itself: ArcGIS re-reads
// its id list).
type PageRereader interface {
	RereadsPages(layer source.Layer) bool
}

// PageDigest is what a poll staged for one page, as a resume compares it:
// its features and a digest of their ids and content hashes (in any
// order: the same features in another order are the same page).
type PageDigest struct {
	Features int
	Sum      []byte
}

// String is the digest for the log.
func (d PageDigest) String() string {
	return fmt.Sprintf("%d features, digest %s", d.Features, hex.EncodeToString(d.Sum))
}

// Equal reports whether both digests are of the same features.
func (d PageDigest) Equal(o PageDigest) bool {
	return d.Features == o.Features && string(d.Sum) == string(o.Sum)
}

// ResumeDisprovedError ends a resumed fetch whose page before the
// checkpoint, read again, is not what the poll staged from it: the layer
// changed while the poll was parked, and the pages staged before it cannot
// be applied beside the pages after. The poll starts over from the first
// page.
type ResumeDisprovedError struct {
	Page         int
	Staged, Read PageDigest
}

// Error says which page differs and both digests, for the log line that
// starts the poll over.
func (e *ResumeDisprovedError) Error() string {
	return fmt.Sprintf("page %d read again is not what the parked poll staged from it (staged %s; read %s): the layer changed while the poll was parked",
		e.Page, e.Staged, e.Read)
}

// rereads reports whether a resumed poll of layer can prove its staged
// pages by reading the page before its checkpoint again.
func (m *Manager) rereads(layer source.Layer) bool {
	r, ok := m.fetcher.(PageRereader)
	return ok && r.RereadsPages(layer)
}

// fetchResumed fetches layer for a poll resumed at firstPage > 0 from the
// page before it, proof = firstPage-1, the last page the poll staged: that
// page is staged again and its digest compared with the one staged before
// the poll parked. Equal, the fetch goes on from firstPage, at the cost of
// one request; different, it ends with a *ResumeDisprovedError. A kind
// that pages by links reads the proof page at the next link the page
// before it recorded (layer.Resume); one that cannot read it again says so
// with source.ErrCannotResume.
//
// The page before the checkpoint rather than the first page: a feature
// inserted or removed anywhere before the checkpoint moves every page after
// it by one, which that page shows and the first page does not when the
// change is past it; and a collection replaced whole changes it either
// way. What it cannot see is a feature edited in place on an earlier page
// while the poll was parked: the snapshot then holds its version of before,
// as it would had the edit come while those pages were read without a
// pause, and the next poll brings the edit.
func (m *Manager) fetchResumed(ctx context.Context, layer source.Layer, pollID int64, firstPage int, stager *pageStager, logger *slog.Logger) (source.FetchStats, error) {
	proof := firstPage - 1
	staged, err := m.store.StagedPageDigest(ctx, pollID, proof)
	if err != nil {
		return source.FetchStats{NumberMatched: -1}, err
	}
	// The page is counted again as it is staged again.
	stager.features -= int64(staged.Features)
	layer.Resume = source.Resume{Features: int(stager.features)}
	if proof > 0 {
		// Where a kind that pages by links reads the proof page again.
		if layer.Resume.Link, _, err = m.store.NextLink(ctx, pollID, proof-1); err != nil {
			return source.FetchStats{NumberMatched: -1}, err
		}
	}
	handle := func(ctx context.Context, page source.Page, features feature.FeatureReader) error {
		if err := stager.handle(ctx, page, features); err != nil || page.Index != proof {
			return err
		}
		if err := stager.wait(); err != nil {
			return err
		}
		read, err := m.store.StagedPageDigest(ctx, pollID, proof)
		if err != nil {
			return err
		}
		if !read.Equal(staged) {
			return &ResumeDisprovedError{Page: proof, Staged: staged, Read: read}
		}
		logger.Info("resume proven: the page before the checkpoint is as staged", "page", proof, "features", read.Features)
		return nil
	}
	return m.fetcher.Fetch(ctx, layer, proof, handle)
}
