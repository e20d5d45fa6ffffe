package adaptersync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Hub downloads a repository's files at a revision over plain HTTPS: the
// file list from GET {URL}/api/models/{repo}/revision/{revision} (siblings),
// each file from {URL}/{repo}/resolve/{revision}/{file}.
type Hub struct {
	URL    string // https://huggingface.co, or HF_ENDPOINT
	Token  string // HF_TOKEN, sent as a Bearer token when set
	Client *http.Client
	// MaxBytes bounds one adapter's download.
	MaxBytes int64
}

const (
	maxHubFiles   = 256
	sourceMarker  = ".adapter-sync-source"
	defaultMaxHub = 8 << 30
)

// adapterFile: the files an adapter needs, at the repository's top level
// (adapter_config.json, the weights, tokenizer files for added tokens).
func adapterFile(name string) bool {
	if name == "" || strings.Contains(name, "/") || strings.HasPrefix(name, ".") {
		return false
	}
	return !strings.EqualFold(name, "README.md")
}

// Fetch downloads repo@revision into dir/name, atomically: into a temporary
// directory beside it, renamed when complete. A directory already there
// from the same source is kept; several engines may share the cache.
func (h *Hub) Fetch(ctx context.Context, dir, name string, src HuggingFace) (string, error) {
	dst := filepath.Join(dir, name)
	want := src.Repo + "@" + src.Revision
	if b, err := os.ReadFile(filepath.Join(dst, sourceMarker)); err == nil && string(b) == want {
		return dst, nil
	}
	files, err := h.list(ctx, src)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(dir, ".tmp-"+name+"-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	budget := h.MaxBytes
	if budget <= 0 {
		budget = defaultMaxHub
	}
	for _, f := range files {
		n, err := h.get(ctx, src, f, filepath.Join(tmp, f), budget)
		if err != nil {
			return "", err
		}
		budget -= n
	}
	if err := os.WriteFile(filepath.Join(tmp, sourceMarker), []byte(want), 0o644); err != nil {
		return "", err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	// Replace what was there (another source, or a partial copy).
	old := ""
	if _, err := os.Stat(dst); err == nil {
		old = tmp + ".old"
		if err := os.Rename(dst, old); err != nil {
			return "", err
		}
		defer os.RemoveAll(old)
	}
	if err := os.Rename(tmp, dst); err != nil {
		// Another engine on the same cache may have won the race.
		if b, rerr := os.ReadFile(filepath.Join(dst, sourceMarker)); rerr == nil && string(b) == want {
			return dst, nil
		}
		return "", err
	}
	return dst, nil
}

func (h *Hub) base() string { return strings.TrimSuffix(h.URL, "/") }

func (h *Hub) list(ctx context.Context, src HuggingFace) ([]string, error) {
	u := h.base() + "/api/models/" + src.Repo + "/revision/" + url.PathEscape(src.Revision)
	resp, err := h.request(ctx, u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, err
	}
	var info struct {
		Siblings []struct {
			RFilename string `json:"rfilename"`
		} `json:"siblings"`
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return nil, fmt.Errorf("hub: %s@%s: listing: %w", src.Repo, src.Revision, err)
	}
	var files []string
	hasConfig := false
	for _, s := range info.Siblings {
		if !adapterFile(s.RFilename) {
			continue
		}
		files = append(files, s.RFilename)
		hasConfig = hasConfig || s.RFilename == "adapter_config.json"
	}
	if len(files) > maxHubFiles {
		return nil, fmt.Errorf("hub: %s@%s has %d files at its top level, at most %d", src.Repo, src.Revision, len(files), maxHubFiles)
	}
	if !hasConfig {
		return nil, fmt.Errorf("hub: %s@%s has no adapter_config.json: not a PEFT adapter", src.Repo, src.Revision)
	}
	return files, nil
}

func (h *Hub) get(ctx context.Context, src HuggingFace, file, to string, budget int64) (int64, error) {
	u := h.base() + "/" + src.Repo + "/resolve/" + url.PathEscape(src.Revision) + "/" + url.PathEscape(file)
	resp, err := h.request(ctx, u)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	f, err := os.Create(to)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, io.LimitReader(resp.Body, budget+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("hub: %s@%s: %s: %w", src.Repo, src.Revision, file, err)
	}
	if n > budget {
		return n, fmt.Errorf("hub: %s@%s is larger than the download limit (--max-download-bytes)", src.Repo, src.Revision)
	}
	return n, nil
}

func (h *Hub) request(ctx context.Context, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if h.Token != "" {
		req.Header.Set("Authorization", "Bearer "+h.Token)
	}
	c := h.Client
	if c == nil {
		c = &http.Client{Timeout: 30 * time.Minute}
	}
	resp, err := c.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is in the message below, once
		}
		return nil, fmt.Errorf("hub: GET %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		msg := strings.TrimSpace(string(b))
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			msg = "no access (gated or private: is the token set?) " + msg
		case http.StatusNotFound:
			msg = "not found " + msg
		}
		return nil, fmt.Errorf("hub: GET %s: %d %s", u, resp.StatusCode, clip(msg))
	}
	return resp, nil
}
