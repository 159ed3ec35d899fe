package e2b

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strings"
	"time"
)

// WatchDir watches by polling the tree from the host side through the
// sandbox's file API (ListDir, every watchPoll), not with inotify: the
// supervisor reads the workspace without entering the sandbox, and a
// process inside cannot blind or flood the watch. Each poll's difference
// is reported as envd's events: a new path CREATE, a vanished one
// REMOVE, a changed size or modification time WRITE, a changed mode
// CHMOD (a rename is its REMOVE and CREATE). Changes within one poll
// interval coalesce.
const watchPoll = 100 * time.Millisecond

type watchEvent struct {
	Name  string     `json:"name"`
	Type  string     `json:"type"`
	Entry *entryInfo `json:"entry,omitempty"`
}

type watchResponse struct {
	Start      *struct{}   `json:"start,omitempty"`
	Filesystem *watchEvent `json:"filesystem,omitempty"`
	Keepalive  *struct{}   `json:"keepalive,omitempty"`
}

func (h *Handler) watchDir(r *http.Request, s *sandbox, st *stream, body []byte, timeout time.Duration) error {
	var req struct {
		Path               string `json:"path"`
		Recursive          bool   `json:"recursive"`
		IncludeEntry       bool   `json:"includeEntry"`
		AllowNetworkMounts bool   `json:"allowNetworkMounts"` // a sandbox has no network mounts: nothing to allow
	}
	if err := decodeMessage(body, &req); err != nil {
		return err
	}
	rel, err := relPath(req.Path)
	if err != nil {
		return err
	}
	fi, err := s.box.Stat(rel)
	if err != nil {
		return fileErr(req.Path, err)
	}
	if fi.Type != "dir" {
		return rpcErr("invalid_argument", "%s: not a directory", req.Path)
	}
	depth := 1
	if req.Recursive {
		depth = 64
	}
	snapshot := func() (map[string]FileInfo, error) {
		list, err := s.box.ListDir(rel, depth)
		if err != nil {
			return nil, err
		}
		m := make(map[string]FileInfo, len(list))
		for _, fi := range list {
			m[fi.Path] = fi
		}
		return m, nil
	}
	prev, err := snapshot()
	if err != nil {
		return fileErr(req.Path, err)
	}
	if err := st.Send(watchResponse{Start: &struct{}{}}); err != nil {
		return nil
	}
	ctx, cancel := withTimeout(r.Context(), timeout)
	defer cancel()
	poll := time.NewTicker(watchPoll)
	defer poll.Stop()
	keep := time.NewTicker(keepaliveInterval(r))
	defer keep.Stop()
	prefix := ""
	if rel != "." {
		prefix = rel + "/"
	}
	for {
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return rpcErr("deadline_exceeded", "the watch reached its timeout (%v)", timeout)
			}
			return nil
		case <-s.box.Done():
			return rpcErr("unavailable", "the sandbox ended: %v", s.box.Err())
		case <-keep.C:
			if st.Send(watchResponse{Keepalive: &struct{}{}}) != nil {
				return nil
			}
		case <-poll.C:
			cur, err := snapshot()
			if err != nil {
				return fileErr(req.Path, err)
			}
			for _, ev := range diffTrees(prev, cur) {
				e := watchEvent{Name: strings.TrimPrefix(ev.path, prefix), Type: ev.kind}
				if req.IncludeEntry && ev.kind != "EVENT_TYPE_REMOVE" {
					en := entryOf(cur[ev.path])
					e.Entry = &en
				}
				if st.Send(watchResponse{Filesystem: &e}) != nil {
					return nil
				}
			}
			prev = cur
		}
	}
}

type treeEvent struct{ path, kind string }

// diffTrees lists what changed from a to b, in path order (removals of a
// path before creations of another, as a rename reads).
func diffTrees(a, b map[string]FileInfo) []treeEvent {
	var out []treeEvent
	for p := range a {
		if _, ok := b[p]; !ok {
			out = append(out, treeEvent{p, "EVENT_TYPE_REMOVE"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	var rest []treeEvent
	for p, nb := range b {
		na, ok := a[p]
		switch {
		case !ok:
			rest = append(rest, treeEvent{p, "EVENT_TYPE_CREATE"})
		case na.Size != nb.Size || !na.ModTime.Equal(nb.ModTime) || na.Type != nb.Type:
			rest = append(rest, treeEvent{p, "EVENT_TYPE_WRITE"})
		case na.Mode != nb.Mode:
			rest = append(rest, treeEvent{p, "EVENT_TYPE_CHMOD"})
		}
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i].path < rest[j].path })
	return append(out, rest...)
}
