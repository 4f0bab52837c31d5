#include "cshim_glib.h"

void cshim_g_object_set_bool(gpointer object, const char *property, bool value) {
  g_object_set(object, property, (gboolean)(value ? TRUE : FALSE), NULL);
}
void cshim_g_object_set_uint(gpointer object, const char *property, unsigned int value) {
  g_object_set(object, property, (guint)value, NULL);
}
void cshim_g_object_set_string(gpointer object, const char *property, const char *value) {
  g_object_set(object, property, value, NULL);
}
bool cshim_g_object_get_bool(gpointer object, const char *property) {
  gboolean value = FALSE;
  g_object_get(object, property, &value, NULL);
  return value ? true : false;
}
unsigned int cshim_g_object_get_uint(gpointer object, const char *property) {
  guint value = 0;
  g_object_get(object, property, &value, NULL);
  return value;
}
