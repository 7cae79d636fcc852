package main

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// showStat is HAProxy 2.6's `show stat` header (cut after qmax's
// neighbours) and rows.
const showStat = "# pxname,svname,qcur,qmax,scur,smax,slim\n"

func TestHAProxyQueued(t *testing.T) {
	for _, tc := range []struct {
		name, rows string
		want       int
		wantErr    bool
	}{
		{"backend queue", "be,s1,0,0,8,8,8\nbe,BACKEND,192,192,8,8,800\n", 192, false},
		{"server and backend add up", "be,s1,3,5,8,8,8\nbe,BACKEND,10,12,8,8,800\n", 13, false},
		{"frontend and other proxies ignored", "fe,FRONTEND,,,200,200,8000\nother,BACKEND,50,50,0,0,1\nbe,BACKEND,4,4,8,8,800\n", 4, false},
		{"empty queue", "be,s1,0,0,0,0,8\nbe,BACKEND,0,0,0,0,800\n", 0, false},
		{"no backend row", "fe,FRONTEND,,,1,1,8000\n", 0, true},
		{"not a number", "be,BACKEND,x,0,0,0,800\n", 0, true},
	} {
		got, err := haproxyQueued(strings.NewReader(showStat+tc.rows+"\n"), "be")
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("%s: got %d, %v; want %d, error %v", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
	if _, err := haproxyQueued(strings.NewReader("# pxname,svname\nbe,BACKEND\n"), "be"); err == nil {
		t.Error("no qcur column: want an error")
	}
}

func TestSampleMax(t *testing.T) {
	for _, tc := range []struct {
		name    string
		values  []int // read in turn, the last one repeated; -1 fails
		want    int
		wantErr bool
	}{
		{"peak kept", []int{1, 5, 3, 2}, 5, false},
		{"failures skipped", []int{-1, 4, -1, 2}, 4, false},
		{"every read fails", []int{-1}, 0, true},
	} {
		var i atomic.Int64
		read := func(context.Context) (int, error) {
			k := min(int(i.Add(1))-1, len(tc.values)-1)
			if tc.values[k] < 0 {
				return 0, errors.New("unreadable")
			}
			return tc.values[k], nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Millisecond)
		got, err := sampleMax(ctx, time.Millisecond, read)
		cancel()
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("%s: got %d, %v; want %d, error %v", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}
