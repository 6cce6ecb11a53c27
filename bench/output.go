package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/redlock-go/redlock/bench/internal/report"
)

// Markers around the sections of a README that -readme replaces: the
// cases' results, the growth curves', the memory measurement's.
const (
	readmeBegin       = "<!-- bench results: begin (written by `go run . -readme README.md`) -->"
	readmeEnd         = "<!-- bench results: end -->"
	growthReadmeBegin = "<!-- bench growth: begin (written by `go run . -growth -readme README.md`) -->"
	growthReadmeEnd   = "<!-- bench growth: end -->"
	memoryReadmeBegin = "<!-- bench memory: begin (written by `go run . -memory -readme README.md`) -->"
	memoryReadmeEnd   = "<!-- bench memory: end -->"
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
		if err := replaceSection(cfg.readme, readmeBegin, readmeEnd, section.String()); err != nil {
			return nil, err
		}
		paths = append(paths, cfg.readme)
	}
	return paths, nil
}

// writeGrowthOutputs writes growth.md, growth.json and a growth-<series>.svg
// chart per series to cfg.out, and the growth section of cfg.readme if
// set. It returns the paths written.
func writeGrowthOutputs(cfg config, rep *report.Report) ([]string, error) {
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	charts := map[string]string{}
	for _, s := range rep.Series {
		var svg bytes.Buffer
		if err := rep.WriteSeriesSVG(&svg, s.ID); err != nil {
			return nil, err
		}
		name := "growth-" + s.ID + ".svg"
		charts[s.ID] = name
		path := filepath.Join(cfg.out, name)
		if err := os.WriteFile(path, svg.Bytes(), 0o644); err != nil {
			return nil, err
		}
		paths = append(paths, path)
	}
	var md, js bytes.Buffer
	md.WriteString("# Lock benchmark: growth curves\n\n")
	if err := rep.WriteGrowthMarkdown(&md, charts); err != nil {
		return nil, err
	}
	if err := rep.WriteJSON(&js, nil); err != nil {
		return nil, err
	}
	more, err := writeFiles(cfg.out, map[string][]byte{"growth.md": md.Bytes(), "growth.json": js.Bytes()})
	if err != nil || cfg.readme == "" {
		return append(paths, more...), err
	}
	rel, err := filepath.Rel(filepath.Dir(cfg.readme), cfg.out)
	if err != nil {
		return nil, err
	}
	for id, name := range charts {
		charts[id] = filepath.ToSlash(filepath.Join(rel, name))
	}
	var section bytes.Buffer
	if err := rep.WriteGrowthMarkdown(&section, charts); err != nil {
		return nil, err
	}
	if err := replaceSection(cfg.readme, growthReadmeBegin, growthReadmeEnd, section.String()); err != nil {
		return nil, err
	}
	return append(append(paths, more...), cfg.readme), nil
}

// writeMemoryOutputs writes memory.md and memory.json to cfg.out, and the
// memory section of cfg.readme if set. It returns the paths written.
func writeMemoryOutputs(cfg config, m *report.Memory) ([]string, error) {
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return nil, err
	}
	var md, section, js bytes.Buffer
	md.WriteString("# Lock benchmark: what lock names leave behind\n\n")
	if err := m.WriteMarkdown(&section); err != nil {
		return nil, err
	}
	md.Write(section.Bytes())
	if err := m.WriteJSON(&js); err != nil {
		return nil, err
	}
	paths, err := writeFiles(cfg.out, map[string][]byte{"memory.md": md.Bytes(), "memory.json": js.Bytes()})
	if err != nil || cfg.readme == "" {
		return paths, err
	}
	if err := replaceSection(cfg.readme, memoryReadmeBegin, memoryReadmeEnd, section.String()); err != nil {
		return nil, err
	}
	return append(paths, cfg.readme), nil
}

// writeFiles writes each named content into dir and returns the paths, in
// the order of their names.
func writeFiles(dir string, files map[string][]byte) ([]string, error) {
	var paths []string
	for _, name := range slices.Sorted(maps.Keys(files)) {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			return nil, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// replaceSection replaces the text between the markers begin and end in the
// file at path.
func replaceSection(path, begin, end, text string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i := strings.Index(s, begin)
	j := strings.Index(s, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %q ... %q section", path, begin, end)
	}
	s = s[:i+len(begin)] + "\n" + text + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}
