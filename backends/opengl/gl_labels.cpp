// SPDX-License-Identifier: Apache-2.0
// backends/opengl/gl_labels.cpp — GL_KHR_debug labels of vgpu's programs and buffers.
#include <algorithm>

#include "gl_device.hpp"

namespace vgpu::opengl {

void GlDevice::label_object(GLenum kind, GLuint name, const std::string& text) noexcept {
  if (name == 0 || text.empty()) return;
  try {
    worker_.post([kind, name, text] {
      if (!glad_glObjectLabel) return;
      // GL_MAX_LABEL_LENGTH is at least 256: a longer name is cut rather than refused.
      glObjectLabel(kind, name, static_cast<GLsizei>(std::min<std::size_t>(text.size(), 255)), text.c_str());
      take_gl_error();  // a label the driver refuses changes nothing
    });
  } catch (...) {  // no memory (or a stopped worker): the object stays unnamed
  }
}

void GlDevice::set_label(BufferImpl& buffer, const std::string& text) noexcept {
  label_object(GL_BUFFER, static_cast<GlBufferImpl&>(buffer).name, text);
}

}  // namespace vgpu::opengl
