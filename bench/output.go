package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/redlock-go/redlock/bench/internal/report"
)

// Markers around the section of a README that -readme replaces.
const (
	readmeBegin = "<!-- bench results: begin (written by `go run . -readme README.md`) -->"
	readmeEnd   = "<!-- bench results: end -->"
)

// writeOutputs writes latest.md, latest.json and latest.svg to cfg.out, and
// the results section of cfg.readme if set. It returns the paths written.
func writeOutputs(cfg config, rep *report.Report) ([]string, error) {
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return nil, err
	}
	ts := targets(rep)
	mdPath := filepath.Join(cfg.out, "latest.md")
	jsonPath := filepath.Join(cfg.out, "latest.json")
	svgPath := filepath.Join(cfg.out, "latest.svg")

	var md bytes.Buffer
	md.WriteString("# Lock benchmark: latest results\n\n")
	if err := rep.WriteMarkdown(&md, ts, "latest.svg"); err != nil {
		return nil, err
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js, ts); err != nil {
		return nil, err
	}
	var svg bytes.Buffer
	if err := rep.WriteSVG(&svg); err != nil {
		return nil, err
	}
	paths := []string{mdPath, jsonPath, svgPath}
	for i, b := range [][]byte{md.Bytes(), js.Bytes(), svg.Bytes()} {
		if err := os.WriteFile(paths[i], b, 0o644); err != nil {
			return nil, err
		}
	}
	if cfg.readme != "" {
		rel, err := filepath.Rel(filepath.Dir(cfg.readme), svgPath)
		if err != nil {
			return nil, err
		}
		var section bytes.Buffer
		if err := rep.WriteMarkdown(&section, ts, filepath.ToSlash(rel)); err != nil {
			return nil, err
		}
		if err := replaceSection(cfg.readme, section.String()); err != nil {
			return nil, err
		}
		paths = append(paths, cfg.readme)
	}
	return paths, nil
}

// replaceSection replaces the text between the markers in the file at path.
func replaceSection(path, text string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i := strings.Index(s, readmeBegin)
	j := strings.Index(s, readmeEnd)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %q ... %q section", path, readmeBegin, readmeEnd)
	}
	s = s[:i+len(readmeBegin)] + "\n" + text + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}
