package adaptersync

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Engine talks to the vLLM engine beside it (stack/testdata/upstream/lora-runtime.md).
type Engine struct {
	URL    string // e.g. http://127.0.0.1:8000
	APIKey string // VLLM_API_KEY, sent as a Bearer token when set
	Client *http.Client
}

// Models is what GET /v1/models says: the base models and the adapters.
type Models struct {
	// Base are the base models: id (the served name) and root (the --model value).
	Base []Card
	// Adapters by name: root is the path the adapter was loaded from.
	Adapters map[string]Card
}

// Card is one entry of /v1/models' data.
type Card struct {
	ID     string  `json:"id"`
	Root   *string `json:"root"`
	Parent *string `json:"parent"`
}

func (c Card) root() string {
	if c.Root == nil {
		return ""
	}
	return *c.Root
}

// EngineError is a refusal with vLLM's status code and its error body.
type EngineError struct {
	Status  int
	Type    string
	Message string
}

func (e *EngineError) Error() string {
	if e.Type == "" && e.Message == "" {
		return fmt.Sprintf("engine answered %d", e.Status)
	}
	return fmt.Sprintf("engine refused (%d %s): %s", e.Status, e.Type, e.Message)
}

const maxBody = 4 << 20

// Models reads GET /v1/models. A card with a parent is an adapter (vLLM
// 0.7.0 and later set parent on adapter cards only).
func (e *Engine) Models(ctx context.Context) (Models, error) {
	body, err := e.do(ctx, http.MethodGet, "/v1/models", nil)
	if err != nil {
		return Models{}, err
	}
	var list struct {
		Data []Card `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return Models{}, fmt.Errorf("/v1/models: %w", err)
	}
	m := Models{Adapters: map[string]Card{}}
	for _, c := range list.Data {
		if c.Parent != nil && *c.Parent != "" {
			m.Adapters[c.ID] = c
		} else {
			m.Base = append(m.Base, c)
		}
	}
	if len(m.Base) == 0 {
		return Models{}, errors.New("/v1/models lists no base model")
	}
	return m, nil
}

// Load is POST /v1/load_lora_adapter {lora_name, lora_path}.
func (e *Engine) Load(ctx context.Context, name, path string) error {
	_, err := e.do(ctx, http.MethodPost, "/v1/load_lora_adapter", map[string]string{"lora_name": name, "lora_path": path})
	return err
}

// Unload is POST /v1/unload_lora_adapter {lora_name}.
func (e *Engine) Unload(ctx context.Context, name string) error {
	_, err := e.do(ctx, http.MethodPost, "/v1/unload_lora_adapter", map[string]string{"lora_name": name})
	return err
}

func (e *Engine) do(ctx context.Context, method, path string, in any) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(e.URL, "/")+path, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if e.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.APIKey)
	}
	c := e.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, engineError(resp.StatusCode, b)
	}
	return b, nil
}

// engineError reads vLLM's error body: flat {object:"error", message, type,
// code} up to v0.10.0 (protocol.py ErrorResponse), nested {error: {message,
// type, param, code}} on later releases; anything else is kept as text.
func engineError(status int, b []byte) *EngineError {
	var flat struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Error   *struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
		Detail any `json:"detail"`
	}
	e := &EngineError{Status: status}
	if json.Unmarshal(b, &flat) == nil {
		switch {
		case flat.Error != nil:
			e.Type, e.Message = flat.Error.Type, flat.Error.Message
		case flat.Message != "" || flat.Type != "":
			e.Type, e.Message = flat.Type, flat.Message
		case flat.Detail != nil:
			d, _ := json.Marshal(flat.Detail)
			e.Message = string(d)
		}
	}
	if e.Message == "" && e.Type == "" {
		e.Message = strings.TrimSpace(string(b))
	}
	e.Type, e.Message = clip(e.Type), clip(e.Message)
	return e
}
