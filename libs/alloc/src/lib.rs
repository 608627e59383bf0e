//! The global allocator of the `csis` binary and of the benches (so they
//! time what the binary runs): mimalloc, built without transparent huge
//! pages. Library crates keep the system allocator; an embedder chooses
//! its own. docs/dependencies.md and docs/performance.md hold the
//! measurements behind each choice here.
//!
//! Why not the `mimalloc` crate's `MiMalloc`: it asks for every block
//! through mimalloc's aligned entry points, which take a slower path and,
//! when the current page has no free block, over-allocate to align. Every
//! mimalloc block is at least 8-byte aligned (block sizes are multiples
//! of 8 from an aligned page start), so an alignment up to 8 goes through
//! the plain entry points; a larger one through the aligned ones.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// The alignment every mimalloc block has.
const PLAIN_ALIGN: usize = 8;

pub struct Allocator;

// SAFETY: each method forwards to the mimalloc function with the same
// contract (a block of at least `size` bytes aligned to `align`, or null;
// `mi_free` and `mi_realloc*` take any block mimalloc returned), and the
// plain functions are used only for alignments every block has.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see the impl.
        unsafe {
            if layout.align() <= PLAIN_ALIGN {
                mi::mi_malloc(layout.size()).cast()
            } else {
                mi::mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see the impl.
        unsafe {
            if layout.align() <= PLAIN_ALIGN {
                mi::mi_zalloc(layout.size()).cast()
            } else {
                mi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: see the impl.
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: see the impl.
        unsafe {
            if layout.align() <= PLAIN_ALIGN {
                mi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                mi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks of every alignment up to a page, allocated, written,
    /// grown and freed through the allocator itself.
    #[test]
    fn blocks_have_the_asked_alignment_and_keep_their_bytes() {
        let a = Allocator;
        for align in [1usize, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [1usize, 7, 8, 24, 40, 100, 5000] {
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: a non-zero size; the block is freed once, by
                // the allocator that returned it.
                unsafe {
                    let p = a.alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size}, align {align}");
                    std::ptr::write_bytes(p, 0xAB, size);
                    let q = a.realloc(p, layout, size * 3);
                    assert_eq!(q as usize % align, 0, "grown: size {size}, align {align}");
                    assert!((0..size).all(|i| *q.add(i) == 0xAB));
                    a.dealloc(q, Layout::from_size_align(size * 3, align).unwrap());
                    let z = a.alloc_zeroed(layout);
                    assert_eq!(z as usize % align, 0);
                    assert!((0..size).all(|i| *z.add(i) == 0));
                    a.dealloc(z, layout);
                }
            }
        }
    }
}
