package eventplane

import "testing"

// The expected ids were computed with Rust 1.95's std DefaultHasher
// (name.hash(&mut h); h.finish()), the code of Dynamo's hash_pod_name.
func TestPodInstanceID(t *testing.T) {
	tests := []struct {
		pod      string
		unmasked uint64
		workerID uint64
	}{
		{"worker-0", 0xb2843710f49c0cff, 1186445869714687},
		{"slotgate-0", 0x342ec1353e4c1daa, 4153084096552362},
		{"", 0x30406ea523c53def, 121655548788207},
		{"vllm-decode-7f9c6d5b8-x2k4q", 0xea3351df00614012, 5438042783432722},
		{"a", 0x719b50b9a4f0e9f3, 7688582637611507},
	}
	for _, tt := range tests {
		t.Run(tt.pod, func(t *testing.T) {
			if got := sipHash13(append([]byte(tt.pod), 0xff)); got != tt.unmasked {
				t.Errorf("sipHash13(%q) = %#x, want %#x", tt.pod, got, tt.unmasked)
			}
			if got := PodInstanceID(tt.pod); got != tt.workerID {
				t.Errorf("PodInstanceID(%q) = %d, want %d", tt.pod, got, tt.workerID)
			}
		})
	}
}
