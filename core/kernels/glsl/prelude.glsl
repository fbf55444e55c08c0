// SPDX-License-Identifier: Apache-2.0
// vgpu GLSL prelude, inserted after "#version 450" and the kernel's defines. It maps the one
// binding ABI onto both APIs: in Vulkan the params block is a push-constant block and the
// local size comes from specialisation constants 2040..2042 (vgpu's reserved ids,
// kReservedSpecIdFirst.., so a body's own constants keep ids 0 and up); in OpenGL the params block is an std430
// storage block at a reserved binding (GL uniform blocks are std140, whose layout differs from
// C and push constants) and the local size comes from VGPU_LOCAL_SIZE_* defines.
#ifdef VULKAN
layout(local_size_x_id = 2040, local_size_y_id = 2041, local_size_z_id = 2042) in;
#define VGPU_PARAMS layout(push_constant) uniform VgpuParams
#else
layout(local_size_x = VGPU_LOCAL_SIZE_X, local_size_y = VGPU_LOCAL_SIZE_Y, local_size_z = VGPU_LOCAL_SIZE_Z) in;
#define VGPU_PARAMS layout(std430, binding = VGPU_PARAMS_BINDING) readonly buffer VgpuParams
#endif
// Linear index of this workgroup when a 1-D count of groups is spread over x and y.
#define VGPU_LINEAR_GROUP (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x)
