// A contract of its own for the mock's tests: widgets, which nothing in src/ implements.
const error = { $ref: '#/components/responses/Error' };
const json = (schema: object, extra: object = {}) => ({
  content: { 'application/json': { schema, ...extra } },
});
const widget = { $ref: '#/components/schemas/Widget' };

export const FIXTURE = {
  openapi: '3.1.0',
  info: { title: 'Widgets', version: '9.8.7' },
  security: [{ credential: [] }],
  paths: {
    '/widgets': {
      get: {
        operationId: 'listWidgets',
        parameters: [{ name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1 } }],
        responses: {
          '200': {
            description: 'Widgets.',
            ...json(
              { type: 'object', properties: { data: { type: 'array', items: widget } } },
              {
                examples: {
                  two: {
                    value: {
                      data: [
                        { object: 'widget', id: '1' },
                        { object: 'widget', id: '2' },
                      ],
                    },
                  },
                  none: { value: { data: [] } },
                },
              },
            ),
          },
          default: error,
        },
      },
      post: {
        operationId: 'createWidget',
        parameters: [
          {
            name: 'Idempotency-Key',
            in: 'header',
            required: true,
            schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' },
          },
        ],
        requestBody: {
          required: true,
          ...json({
            type: 'object',
            additionalProperties: false,
            required: ['name'],
            properties: {
              name: { type: 'string', minLength: 1 },
              color: { enum: ['red', 'blue'] },
            },
          }),
        },
        responses: {
          '201': {
            description: 'Created.',
            ...json({ type: 'object' }, { example: { data: { id: '7' } } }),
          },
          default: error,
        },
      },
    },
    '/widgets/{widget_id}': {
      parameters: [
        {
          name: 'widget_id',
          in: 'path',
          required: true,
          schema: { type: 'string', pattern: '^[1-9][0-9]*$' },
        },
      ],
      get: {
        operationId: 'getWidget',
        responses: {
          '200': { description: 'A widget.', ...json(widget) },
          '404': error,
          default: error,
        },
      },
      delete: {
        operationId: 'deleteWidget',
        responses: { '204': { description: 'Gone.' }, default: error },
      },
    },
  },
  components: {
    securitySchemes: { credential: { type: 'http', scheme: 'bearer' } },
    responses: {
      Error: {
        description: 'An error.',
        ...json({
          type: 'object',
          properties: { error: { type: 'object', properties: { code: { type: 'string' } } } },
          examples: [
            {
              error: { code: 'not_found', message: 'Not here.', request_id: 'req_x', details: [] },
            },
          ],
        }),
      },
    },
    schemas: {
      Widget: {
        type: 'object',
        required: ['object', 'id', 'size', 'note'],
        properties: {
          object: { const: 'widget' },
          id: { type: 'string', examples: ['12'] },
          size: { type: 'integer', minimum: 3, maximum: 9 },
          note: { type: ['string', 'null'], format: 'date-time' },
          tags: { type: 'array', items: { type: 'string', enum: ['new', 'old'] } },
        },
      },
    },
  },
};
