// The GObject calls Swift cannot make (libnice's properties): g_object_set/get are variadic.
#ifndef CSHIM_GLIB_H
#define CSHIM_GLIB_H

#include <stdbool.h>
#include <stdint.h>

#include <glib-object.h>

// g_object_set is variadic and NULL-terminated.
void cshim_g_object_set_bool(gpointer object, const char *property, bool value);
void cshim_g_object_set_uint(gpointer object, const char *property, unsigned int value);
void cshim_g_object_set_string(gpointer object, const char *property, const char *value);
bool cshim_g_object_get_bool(gpointer object, const char *property);
unsigned int cshim_g_object_get_uint(gpointer object, const char *property);

#endif
