package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// scrape fetches url every interval until the server exits, as a
// Prometheus server would (which scrapes every 15 s by default: once a
// second is the harsher case). A scrape that fails while the server runs,
// or a body without sluice's decision counter, is printed: the run's
// figures would then not be those of a scraped server.
func (s *server) scrape(url string, interval time.Duration) {
	client := &http.Client{Timeout: 5 * time.Second}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-tick.C:
		}
		if err := scrapeOnce(client, url); err != nil {
			select {
			case <-s.done: // the server stopped mid-scrape: expected at a run's end
				return
			default:
				fmt.Fprintf(os.Stderr, "bench: scraping %s: %v\n", url, err)
			}
		}
	}
}

func scrapeOnce(client *http.Client, url string) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	if !strings.Contains(string(body), "sluice_decisions_total") {
		return fmt.Errorf("no sluice_decisions_total in %d bytes", len(body))
	}
	return nil
}
