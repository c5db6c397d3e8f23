/* emu_backend.h: the emu backend's own pieces (emu_backend.c; the backend
 * itself is tile_emu_backend, backend.h). */
#ifndef TILE_EMU_BACKEND_H
#define TILE_EMU_BACKEND_H

/* The text of emu_device.h, which every kernel is compiled with
 * (emu_device.c, generated from it by tests/gpu/gen_device_header.sh). */
extern const char emu_device_header[];

#endif
