/* allocator/layout.h: the arenas' units. 4 KiB pages and 2 MiB huge
 * pages (x86-64, and arm64 with 4 KiB pages: the arenas check
 * hz_page_size against HZ_PAGE before they map a chunk), 64 MiB chunks,
 * and the sizes that route a block. */
#ifndef HZ_LAYOUT_H
#define HZ_LAYOUT_H

#include <stddef.h>

#include "../arch/common.h"
#include "../os/os.h"

#define HZ_PAGE_SHIFT 12
#define HZ_PAGE ((size_t)1 << HZ_PAGE_SHIFT)
#define HZ_CHUNK_SHIFT 26 /* 64 MiB */
#define HZ_CHUNK_SIZE ((size_t)1 << HZ_CHUNK_SHIFT)
#define HZ_CHUNK_PAGES (HZ_CHUNK_SIZE >> HZ_PAGE_SHIFT)
#define HZ_CHUNK_WORDS (HZ_CHUNK_PAGES / 64)
#define HZ_HUGE_PAGES (HZ_HUGE_SIZE >> HZ_PAGE_SHIFT)

/* Arenas: a thread keeps to one (arena.h). */
#define HZ_ARENAS 4
/* The largest block a chunk serves; larger ones are huge blocks. */
#define HZ_RUN_MAX (HZ_CHUNK_SIZE / 2)
/* The largest block the arenas serve. */
#define HZ_HUGE_MAX ((size_t)1 << 46)

#endif
